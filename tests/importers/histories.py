"""Sample histories, written the way each tool writes them (their documented formats).

Each writer puts a small, realistic history at the tool's default location under `home`
(or at `path`) and returns what an import of it must find. Databases are written with
APSW, as the store reads them, so no test loads two SQLite copies on one file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import apsw

SESSION = "5f0c8e2a-1b7d-4c55-9a43-7e0d2b8f1c10"
CODEX_SESSION = "0199a5f3-4a1e-7c21-b8d4-2f6b1e9c0a77"


@dataclass
class Written:
    path: Path  # what was written (the file or database, or the directory of files)
    sessions: int
    messages: int
    malformed: int = 0


def jsonl(path: Path, records: list, *, raw: tuple[int, str] | None = None) -> None:
    """Write records as JSON lines; `raw` = (index, text) puts a line of text at that index."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    if raw is not None:
        lines.insert(raw[0], raw[1])
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


# --- Claude Code ------------------------------------------------------------------------


def claude_line(kind: str, uuid: str, parent: str | None, message: dict | None = None, **extra) -> dict:
    line = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/home/ana/upload-service",
            "sessionId": SESSION, "version": "1.0.98", "gitBranch": "fix-flaky", "type": kind, "uuid": uuid,
            "timestamp": "2026-11-20T09:15:0%d.000Z" % (int(uuid[-1]) % 10)}
    if message is not None:
        line["message"] = message
    line.update(extra)
    return line


def usage(inp: int, out: int) -> dict:
    return {"input_tokens": inp, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 2000,
            "output_tokens": out, "service_tier": "standard"}


def claude_code(home: Path) -> Written:
    project = home / ".claude" / "projects" / "-home-ana-upload-service"
    model = "claude-sonnet-4-5-20250929"
    records = [
        {"type": "summary", "summary": "Fix the flaky upload test", "leafUuid": "u-0006"},
        claude_line("user", "u-0001", None, {"role": "user", "content": "Why does the upload test fail on CI?"}),
        claude_line("assistant", "u-0002", "u-0001", {
            "id": "msg_01", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "thinking", "thinking": "The finaliser may race.", "signature": "c2ln"}],
            "stop_reason": None, "usage": usage(12, 40)}, requestId="req_01"),
        claude_line("assistant", "u-0003", "u-0002", {
            "id": "msg_01", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "Let me run it."},
                        {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "pytest -x tests/test_upload.py"}}],
            "stop_reason": "tool_use", "usage": usage(12, 40)}, requestId="req_01"),
        claude_line("user", "u-0004", "u-0003", {"role": "user", "content": [
            {"tool_use_id": "toolu_01", "type": "tool_result", "content": "FAILED test_upload.py::test_finaliser - race",
             "is_error": True}]}, toolUseResult={"stdout": "FAILED", "stderr": ""}),
        {"type": "file-history-snapshot", "messageId": "u-0004", "snapshot": {}},
        claude_line("assistant", "u-0005", "u-0004", {
            "id": "msg_02", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": "It races the finaliser; await the upload before closing."}],
            "stop_reason": "end_turn", "usage": usage(30, 25)}, requestId="req_02"),
        claude_line("system", "u-0006", "u-0005", None, subtype="compact_boundary", content="Conversation compacted",
                    compactMetadata={"trigger": "auto", "preTokens": 155000}),
        claude_line("user", "u-0007", None, {"role": "user", "content": "This session is being continued: the upload "
                                             "test raced the finaliser."}, isCompactSummary=True),
    ]
    jsonl(project / f"{SESSION}.jsonl", records, raw=(5, '{"type": "user", "uuid": "broken'))
    agent = [claude_line("user", "a-0001", None, {"role": "user", "content": "Search the repo for finaliser uses"},
                         isSidechain=True, agentId="a1b2c3"),
             claude_line("assistant", "a-0002", "a-0001", {
                 "id": "msg_03", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                 "content": [{"type": "text", "text": "Found three finaliser uses."}], "usage": usage(5, 9)},
                 isSidechain=True, agentId="a1b2c3")]
    jsonl(project / SESSION / "subagents" / "agent-a1b2c3.jsonl", agent)
    # user, thinking, text+call, result, answer, compaction marker, summary; agent: 2
    return Written(home / ".claude" / "projects", sessions=2, messages=9, malformed=1)


# --- Codex ----------------------------------------------------------------------------


def codex_lines(n_turns: int = 1) -> list[dict]:
    def at(i: int) -> str:
        return f"2026-11-21T10:00:{i:02d}.000Z"

    lines = [
        {"timestamp": at(0), "type": "session_meta", "payload": {
            "id": CODEX_SESSION, "timestamp": at(0), "cwd": "/home/ana/billing", "originator": "codex_cli_rs",
            "cli_version": "0.46.0", "instructions": None, "source": "cli",
            "git": {"commit_hash": "3f9a1c2", "branch": "main", "repository_url": "git@example.com:ana/billing.git"}}},
        {"timestamp": at(1), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/ana/billing</cwd>\n</environment_context>"}]}},
        {"timestamp": at(1), "type": "turn_context", "payload": {"cwd": "/home/ana/billing", "approval_policy": "on-request",
                                                               "sandbox_policy": {"mode": "workspace-write"},
                                                               "model": "gpt-5-codex", "effort": "medium", "summary": "auto"}},
    ]
    for t in range(n_turns):
        lines += codex_turn(t, 2 + t * 7)
    return lines


def codex_turn(t: int, i: int) -> list[dict]:
    def at(k: int) -> str:
        return f"2026-11-21T10:{(i + k) // 60:02d}:{(i + k) % 60:02d}.000Z"

    call = f"call_{t}"
    return [
        {"timestamp": at(0), "type": "response_item", "payload": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"Why is invoice {t} rounded wrong?"}]}},
        {"timestamp": at(0), "type": "event_msg", "payload": {"type": "user_message", "message": f"Why is invoice {t} rounded wrong?", "kind": "plain"}},
        {"timestamp": at(1), "type": "response_item", "payload": {"type": "reasoning", "summary": [
            {"type": "summary_text", "text": "**Checking the rounding mode**"}], "content": None, "encrypted_content": "gAAA"}},
        {"timestamp": at(2), "type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                                                 "arguments": json.dumps({"command": ["rg", "ROUND_HALF"]}), "call_id": call}},
        {"timestamp": at(3), "type": "response_item", "payload": {"type": "function_call_output", "call_id": call,
                                                                 "output": json.dumps({"output": "billing.py:12: ROUND_HALF_EVEN", "metadata": {"exit_code": 0}})}},
        {"timestamp": at(4), "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": f"Invoice {t} uses banker's rounding; switch to ROUND_HALF_UP."}]}},
        {"timestamp": at(5), "type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 3000 * (t + 1), "cached_input_tokens": 1000 * (t + 1),
                                  "output_tokens": 200 * (t + 1), "reasoning_output_tokens": 50 * (t + 1),
                                  "total_tokens": 3200 * (t + 1)},
            "last_token_usage": {"input_tokens": 3000, "cached_input_tokens": 1000, "output_tokens": 200,
                                 "reasoning_output_tokens": 50, "total_tokens": 3200},
            "model_context_window": 272000}, "rate_limits": None}},
    ]


def codex(home: Path) -> Written:
    path = home / ".codex" / "sessions" / "2026" / "11" / "21" / f"rollout-2026-11-21T10-00-00-{CODEX_SESSION}.jsonl"
    lines = codex_lines(1) + [{"timestamp": "2026-11-21T10:05:00.000Z", "type": "compacted",
                               "payload": {"message": "Summary: invoice rounding switched to ROUND_HALF_UP."}}]
    jsonl(path, lines, raw=(4, "\x00\x01 not json"))
    # context, user, reasoning, call, output, answer, compaction summary
    return Written(home / ".codex" / "sessions", sessions=1, messages=7, malformed=1)


# --- SQLite-backed tools --------------------------------------------------------------


def database(path: Path, script: str, rows: dict[str, list[tuple]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = apsw.Connection(str(path))
    with conn:
        conn.execute(script)
        for table, values in rows.items():
            for row in values:
                conn.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(row))})', row)
    conn.close()


LLM_OLD = """
CREATE TABLE conversations (id TEXT PRIMARY KEY, name TEXT, model TEXT);
CREATE TABLE responses (id TEXT PRIMARY KEY, model TEXT, prompt TEXT, system TEXT, prompt_json TEXT, options_json TEXT,
  response TEXT, response_json TEXT, conversation_id TEXT REFERENCES conversations(id), duration_ms INTEGER,
  datetime_utc TEXT, input_tokens INTEGER, output_tokens INTEGER, token_details TEXT, schema_id TEXT,
  resolved_model TEXT);
CREATE TABLE tools (id INTEGER PRIMARY KEY, hash TEXT, name TEXT, description TEXT, input_schema TEXT, plugin TEXT);
CREATE TABLE tool_calls (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER, name TEXT, arguments TEXT, tool_call_id TEXT);
CREATE TABLE tool_results (id INTEGER PRIMARY KEY, response_id TEXT, tool_id INTEGER, name TEXT, output TEXT,
  tool_call_id TEXT, instance_id INTEGER, exception TEXT);
"""
LLM_NEW = """
CREATE TABLE fragments (id INTEGER PRIMARY KEY, hash TEXT, content TEXT, datetime_utc TEXT, source TEXT);
CREATE TABLE messages (hash TEXT PRIMARY KEY, parent_hash TEXT REFERENCES messages(hash), role TEXT, provider_metadata TEXT);
CREATE TABLE parts (id INTEGER PRIMARY KEY, message_hash TEXT REFERENCES messages(hash), position INTEGER, type TEXT,
  tool_name TEXT, text TEXT, payload TEXT);
CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, tip_message_hash TEXT, forked_from TEXT, datetime_utc TEXT);
CREATE TABLE turns (id TEXT PRIMARY KEY, thread_id TEXT REFERENCES threads(id), parent_message_hash TEXT,
  tip_message_hash TEXT, model TEXT, resolved_model TEXT, options_json TEXT, schema_id TEXT, input_tokens INTEGER,
  output_tokens INTEGER, token_details TEXT, duration_ms INTEGER, datetime_utc TEXT, response_json TEXT);
"""


def llm(home: Path) -> Written:
    """A logs.db written by both generations: two older responses (one calling a tool) and
    a newer thread of two turns, one of them also in the older table (the dual-write era)."""
    path = home / ".config" / "io.datasette.llm" / "logs.db"
    t = "2026-11-22T08:00:0{}.000000+00:00"
    database(path, LLM_OLD + LLM_NEW, {
        "conversations": [("01jconv", "Weather in Kyoto", "gpt-4o-mini")],
        "responses": [
            ("01jresp1", "gpt-4o-mini", "What's the weather in Kyoto?", "Be brief.", None, "{}", "", None, "01jconv",
             900, t.format(1), 20, 8, None, None, "gpt-4o-mini-2024-07-18"),
            ("01jresp2", "gpt-4o-mini", "", "Be brief.", None, "{}", "Sunny, 21°C in Kyoto.", None, "01jconv",
             700, t.format(2), 40, 9, None, None, None),
            ("01jturn1", "gpt-4.1", "Plan a day in Osaka", None, None, "{}", "Start at Osaka Castle.", None, None,
             500, t.format(3), 10, 5, None, None, None),
        ],
        "tool_calls": [(1, "01jresp1", None, "weather", '{"city": "Kyoto"}', "call_w1")],
        "tool_results": [(1, "01jresp2", None, "weather", '{"sky": "sunny", "c": 21}', "call_w1", None, None)],
        "fragments": [(1, "h1", "Osaka Castle", t.format(3), None)],
        "messages": [("m1", None, "user", None), ("m2", "m1", "assistant", None),
                     ("m3", "m2", "user", None), ("m4", "m3", "assistant", None)],
        "parts": [(1, "m1", 0, "text", None, "Plan a day in Osaka", None),
                  (2, "m2", 0, "text", None, None, json.dumps({"text_ref": [{"literal": "Start at "}, {"fragment": 1}, {"literal": "."}]})),
                  (3, "m3", 0, "text", None, "And the evening?", None),
                  (4, "m4", 0, "reasoning", None, "Evening spots near the castle.", None),
                  (5, "m4", 1, "text", None, "Dotonbori for dinner.", None)],
        "threads": [("01jthread", "Osaka day", "m4", None, t.format(3))],
        # a turn's parent is its prompt, its tip its response
        "turns": [("01jturn1", "01jthread", "m1", "m2", "gpt-4.1", None, "{}", None, 10, 5, None, 500, t.format(3), None),
                  ("01jturn2", "01jthread", "m3", "m4", "gpt-4.1", None, "{}", None, 30, 12, None, 600, t.format(4), None)],
    })
    # older: system, user, assistant call; tool result, assistant; newer: user, assistant, user, assistant
    return Written(path, sessions=2, messages=9)


HERMES = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, user_id TEXT, model TEXT, parent_session_id TEXT,
  started_at REAL NOT NULL, ended_at REAL, end_reason TEXT, message_count INTEGER DEFAULT 0,
  tool_call_count INTEGER DEFAULT 0, input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0,
  cache_read_tokens INTEGER DEFAULT 0, cache_write_tokens INTEGER DEFAULT 0, reasoning_tokens INTEGER DEFAULT 0,
  cwd TEXT, git_branch TEXT, git_repo_root TEXT, billing_provider TEXT, estimated_cost_usd REAL, title TEXT);
CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
  role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL,
  token_count INTEGER, finish_reason TEXT, reasoning TEXT, active INTEGER NOT NULL DEFAULT 1,
  compacted INTEGER NOT NULL DEFAULT 0);
"""


def hermes_rows(session: str, start: float, *, parent: str | None = None, end: str | None = None) -> dict:
    calls = json.dumps([{"id": "call_h1", "type": "function", "function": {"name": "web_search", "arguments": '{"q": "tokyo rain"}'}}])
    return {
        "sessions": [(session, "telegram", "u42", "anthropic/claude-sonnet-4", parent, start, None, end, 4, 1,
                      1200, 300, 800, 0, 0, "/home/ana/trips", "main", "/home/ana/trips", "openrouter", 0.012,
                      None)],
        "messages": [(None, session, "user", "Will it rain in Tokyo tomorrow?", None, None, None, start + 1, 9, None, None, 1, 1),
                     (None, session, "assistant", None, None, calls, None, start + 2, 12, "tool_calls", "Check the forecast.", 1, 0),
                     (None, session, "tool", '{"rain": "80%"}', "call_h1", None, "web_search", start + 3, 5, None, None, 1, 0),
                     (None, session, "assistant", "Yes, 80% chance: take an umbrella.", None, None, None, start + 4, 11, "stop", None, 1, 0)],
    }


def hermes(home: Path) -> Written:
    root = home / ".hermes"
    database(root / "state.db", HERMES, hermes_rows("20261123_090000_aa11bb", 1795424400.0))
    database(root / "profiles" / "coder" / "state.db", HERMES, hermes_rows("20261123_100000_cc22dd", 1795428000.0))
    return Written(root, sessions=2, messages=8)


AGENTS = """
CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP);
CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_data TEXT NOT NULL,
  created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
  FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE);
"""


def agents_items() -> list[dict]:
    return [
        {"role": "user", "content": "What's the weather in Paris?"},
        {"id": "fc_01", "type": "function_call", "call_id": "call_p1", "name": "get_weather", "arguments": '{"city": "Paris"}', "status": "completed"},
        {"type": "function_call_output", "call_id": "call_p1", "output": "Cloudy, 14°C"},
        {"id": "msg_01", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Cloudy and 14°C in Paris.", "annotations": []}]},
    ]


def openai_agents(path: Path) -> Written:
    rows = [(None, "conversation_123", json.dumps(item), f"2026-11-24 12:00:0{i}") for i, item in enumerate(agents_items())]
    rows.insert(2, (None, "conversation_123", "{truncated", "2026-11-24 12:00:09"))
    database(path, AGENTS, {"agent_sessions": [("conversation_123", "2026-11-24 12:00:00", "2026-11-24 12:00:04")],
                            "agent_messages": rows})
    return Written(path, sessions=1, messages=4, malformed=1)


LANGCHAIN = "CREATE TABLE message_store (id INTEGER NOT NULL PRIMARY KEY, session_id TEXT, message TEXT);"


def langchain_messages() -> list[dict]:
    def msg(kind: str, **data) -> dict:
        return {"type": kind, "data": {"content": "", "additional_kwargs": {}, "response_metadata": {}, "type": kind,
                                        "name": None, "id": None, **data}}

    return [
        msg("system", content="You are a travel assistant."),
        msg("human", content="Find me a ryokan in Hakone."),
        msg("ai", id="run-7f3a-0", tool_calls=[{"name": "search_hotels", "args": {"area": "Hakone"}, "id": "call_l1", "type": "tool_call"}],
            usage_metadata={"input_tokens": 120, "output_tokens": 18, "total_tokens": 138,
                            "input_token_details": {"cache_read": 20}},
            response_metadata={"model_name": "gpt-4o-2024-08-06", "finish_reason": "tool_calls"},
            invalid_tool_calls=[], example=False),
        msg("tool", content="Gora Kadan: 2 rooms left", tool_call_id="call_l1", name="search_hotels", status="success"),
        msg("ai", content="Gora Kadan has two rooms left.", id="run-7f3a-1",
            usage_metadata={"input_tokens": 160, "output_tokens": 9, "total_tokens": 169},
            response_metadata={"model_name": "gpt-4o-2024-08-06", "finish_reason": "stop"}),
    ]


def langchain(path: Path) -> Written:
    rows = [(i + 1, "trip-hakone", json.dumps(m)) for i, m in enumerate(langchain_messages())]
    database(path, LANGCHAIN, {"message_store": rows})
    return Written(path, sessions=1, messages=5)


WRITERS = {"claude-code": claude_code, "codex": codex, "llm": llm, "hermes": hermes}
