"""Importing each tool's history: what lands in the store, and that importing again stores nothing."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import apsw
import pytest

import histories
import sessiondb
from sessiondb import InvalidInput, NotFound
from sessiondb.importers import SOURCES, import_from, location


def write(source: str, home: Path) -> histories.Written:
    if source == "openai-agents":
        return histories.openai_agents(home / "agents.db")
    if source == "langchain":
        return histories.langchain(home / "chat.db")
    return histories.WRITERS[source](home)


def path_arg(source: str, written: histories.Written):
    """None (the default location) for the tools that have one."""
    return None if source in histories.WRITERS else written.path


def usage_of(store, source: str) -> list:
    return sorted((s.id, store.usage(s.id).calls, store.usage(s.id).input_tokens, store.usage(s.id).output_tokens)
                  for s in store.list_sessions(source=source, limit=1000).items)


@pytest.mark.parametrize("source", list(SOURCES))
def test_importing_a_history_twice_stores_it_once(home, source):
    written = write(source, home)
    with sessiondb.open_store() as store:
        first = import_from(store, source, path_arg(source, written))
        usage = usage_of(store, source)
        again = import_from(store, source, path_arg(source, written))
        assert (first.sessions, first.sessions_created, first.messages) == (written.sessions, written.sessions, written.messages)
        assert len(first.malformed) == written.malformed
        assert (again.sessions_created, again.messages, again.skipped) == (0, 0, written.messages)
        assert usage_of(store, source) == usage  # no model call counted twice
        stored = store.list_sessions(source=source, limit=1000).items
        assert len(stored) == written.sessions
        assert sum(len(store.transcript(s.id, include_compacted=True)) for s in stored) == written.messages
        assert all(s.metadata["tool"] == source and s.metadata["original_id"] for s in stored)


@pytest.mark.parametrize("source", ["claude-code", "codex", "llm", "hermes", "openai-agents", "langchain"])
def test_tool_results_keep_the_id_of_the_call_they_answer(home, source):
    written = write(source, home)
    with sessiondb.open_store() as store:
        import_from(store, source, path_arg(source, written))
        pairs = 0
        for s in store.list_sessions(source=source, limit=1000).items:
            calls: dict[str, str] = {}
            for m in store.transcript(s.id, include_compacted=True):
                for call in m.tool_calls or []:
                    calls[call["id"]] = call["function"]["name"]
                if m.role == "tool":
                    assert m.tool_call_id in calls, f"{m.tool_call_id} answers no earlier call"
                    pairs += 1
        assert pairs >= 1


@pytest.mark.parametrize("source", ["claude-code", "codex", "openai-agents"])
def test_a_malformed_line_is_reported_with_its_file_and_line_and_the_rest_is_imported(home, source):
    written = write(source, home)
    with sessiondb.open_store() as store:
        report = import_from(store, source, path_arg(source, written))
    assert report.messages == written.messages
    (bad,) = report.malformed
    assert bad["line"] in {6, 5, 3} and Path(bad["file"]).is_file() and bad["reason"]
    lines = Path(bad["file"]).read_bytes().split(b"\n") if source != "openai-agents" else None
    if lines is not None:  # the line named is the line that is broken
        with pytest.raises(ValueError):
            json.loads(lines[bad["line"] - 1])


def test_claude_code_sessions_carry_the_project_the_title_and_each_response_s_usage_once(home):
    histories.claude_code(home)
    with sessiondb.open_store() as store:
        import_from(store, "claude-code")
        main = store.get_session(f"claude-code-{histories.SESSION}")
        agent = store.get_session(f"claude-code-{histories.SESSION}-agent-a1b2c3")
        messages = store.transcript(main.id)
        usage = store.usage(main.id)
    assert main.title == "Fix the flaky upload test"
    assert {k: main.metadata[k] for k in ("project", "git_branch", "original_id")} == {
        "project": "/home/ana/upload-service", "git_branch": "fix-flaky", "original_id": histories.SESSION}
    assert (agent.parent_session_id, agent.parent_relation, agent.metadata["sidechain"]) == (main.id, "delegation", True)
    assert messages[0].uid == "u-0001" and messages[1].reasoning == "The finaliser may race."
    # msg_01 is written as two lines repeating its usage: counted once, with msg_02
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (2, 42, 65, 4000)
    assert messages[-1].display_kind == "compaction_summary"


def test_codex_running_totals_are_recorded_by_their_growth(home):
    path = histories.codex(home).path
    rollout = next(path.rglob("rollout-*.jsonl"))
    with sessiondb.open_store() as store:
        import_from(store, "codex")
        with rollout.open("a") as f:  # the same session's next turn, with its new running total
            for line in histories.codex_turn(1, 40):
                f.write(json.dumps(line) + "\n")
        report = import_from(store, "codex")
        usage = store.usage(f"codex-{histories.CODEX_SESSION}")
    assert report.messages == 5
    # the last total: 6000 input of which 2000 cached, 400 output, 100 reasoning
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.reasoning_tokens) == (4000, 2000, 400, 100)
    assert usage.rows[0].model == "gpt-5-codex"


def test_llm_reads_both_schemas_and_a_response_logged_in_both_once(home):
    histories.llm(home)
    with sessiondb.open_store() as store:
        import_from(store, "llm")
        older = store.transcript("llm-01jconv")
        newer = store.transcript("llm-01jthread")
        found = store.search("Osaka Castle")
    assert [m.role for m in older] == ["system", "user", "assistant", "tool", "assistant"]
    assert older[2].tool_calls[0]["id"] == "call_w1" and older[3].tool_call_id == "call_w1"
    assert [m.text for m in newer] == ["Plan a day in Osaka", "Start at Osaka Castle.", "And the evening?",
                                       "Dotonbori for dinner."]
    assert newer[3].reasoning == "Evening spots near the castle."
    assert len(found) == 1  # the dual-written turn is not stored twice


def test_hermes_reads_every_profile_and_keeps_compacted_messages_compacted(home):
    histories.hermes(home)
    with sessiondb.open_store() as store:
        import_from(store, "hermes")
        profiles = {s.metadata["profile"]: s for s in store.list_sessions(source="hermes").items}
        messages = store.transcript(profiles["coder"].id, include_compacted=True)
        usage = store.usage(profiles["default"].id)
    assert set(profiles) == {"default", "coder"}
    assert profiles["coder"].metadata["platform"] == "telegram"
    assert messages[0].state == "compacted" and messages[1].tool_calls[0]["id"] == messages[2].tool_call_id
    assert (usage.input_tokens, usage.cache_read_tokens, round(usage.cost_usd, 3)) == (1200, 800, 0.012)


def test_a_message_changed_at_the_source_is_reported_and_the_others_are_kept(home):
    written = histories.claude_code(home)
    with sessiondb.open_store() as store:
        import_from(store, "claude-code")
        transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
        text = transcript.read_text().replace("Why does the upload test fail on CI?", "Why does it fail?")
        transcript.write_text(text + json.dumps(histories.claude_line(
            "user", "u-0008", "u-0007", {"role": "user", "content": "Thanks!"})) + "\n")
        report = import_from(store, "claude-code")
    assert (report.conflicts, report.messages) == (1, 1)


def test_each_tool_s_default_location_is_found_from_home(home):
    for source in histories.WRITERS:
        histories.WRITERS[source](home)
    assert location("claude-code") == home / ".claude" / "projects"
    assert location("codex") == home / ".codex" / "sessions"
    assert location("llm") == home / ".config" / "io.datasette.llm" / "logs.db"
    assert location("hermes") == home / ".hermes"


def test_a_tool_without_a_default_location_or_a_missing_path_is_a_clear_error(home):
    with pytest.raises(InvalidInput, match="give the database's PATH"):
        location("langchain")
    with pytest.raises(InvalidInput, match="unknown source 'cursor'"):
        location("cursor")
    with pytest.raises(NotFound, match=r"no codex history at .*: give its PATH"):
        location("codex")


def test_a_file_that_is_not_the_tool_s_database_is_reported_not_fatal(home):
    bogus = home / "notes.db"
    bogus.write_text("not a database")
    with sessiondb.open_store() as store:
        report = import_from(store, "langchain", bogus)
    assert report.messages == 0 and len(report.malformed) == 1 and report.malformed[0]["file"] == str(bogus)


def test_a_claude_code_path_may_be_one_project_or_one_file(home):
    written = histories.claude_code(home)
    project = next(written.path.iterdir())
    with sessiondb.open_store(home=home / "a") as store:
        assert import_from(store, "claude-code", project).messages == written.messages
    with sessiondb.open_store(home=home / "b") as store:
        assert import_from(store, "claude-code", project / f"{histories.SESSION}.jsonl").messages == 7


def test_a_message_the_store_refuses_is_reported_with_its_line_and_the_batch_is_kept(home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    line = len(transcript.read_text().splitlines()) + 1
    before_1970 = histories.claude_line("user", "u-0009", None, {"role": "user", "content": "from the past"},
                                        timestamp="1969-12-31T23:59:59.000Z")  # valid JSON, not a time the store keeps
    with transcript.open("a") as f:
        f.write(json.dumps(before_1970) + "\n")
    with sessiondb.open_store() as store:
        report = import_from(store, "claude-code")
    refused = [m for m in report.malformed if m["line"] == line]
    assert report.messages == written.messages
    assert refused and refused[0]["file"] == str(transcript) and "timestamp" in refused[0]["reason"]


def test_a_tool_result_holding_half_a_character_is_kept_and_its_call_stays_answered(home):
    written = histories.claude_code(home)
    transcript = next(written.path.rglob(f"{histories.SESSION}.jsonl"))
    line = len(transcript.read_text().splitlines()) + 2
    call = {"type": "tool_use", "id": "toolu_cut", "name": "Read", "input": {"file_path": "/tmp/emoji.txt"}}
    cut = {"type": "tool_result", "tool_use_id": "toolu_cut", "content": "a string cut inside an emoji: \ud83d"}
    with transcript.open("a") as f:  # a lone surrogate: valid JSON, text with no UTF-8 form
        f.write(json.dumps(histories.claude_line("assistant", "a-0011", None, {
            "id": "msg_cut", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [call], "stop_reason": "tool_use"})) + "\n")
        f.write(json.dumps(histories.claude_line("user", "u-0012", "a-0011", {"role": "user", "content": [cut]})) + "\n")
    with sessiondb.open_store() as store:
        report = import_from(store, "claude-code")
        again = import_from(store, "claude-code")
        (result,) = [m for m in store.transcript(f"claude-code-{histories.SESSION}") if m.tool_call_id == "toolu_cut"]
    assert result.role == "tool" and result.tool_name == "Read"
    assert result.text == "a string cut inside an emoji: \ud83d"  # exactly as the tool gave it
    assert report.messages == written.messages + 2 and again.messages == 0
    assert [m for m in report.malformed if m["line"] == line] == []


def test_codex_rollouts_of_earlier_releases_without_an_envelope_are_read(home):
    rollout = home / ".codex" / "sessions" / "2025" / "05" / "01" / "rollout-2025-05-01T09-00-00-old.jsonl"
    histories.jsonl(rollout, [
        {"id": "4b1f6f0e-old", "timestamp": "2025-05-01T09:00:00.000Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the failing tests"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"pytest\"]}", "call_id": "call_o1"},
        {"type": "function_call_output", "call_id": "call_o1", "output": "2 failed"},
    ])
    with sessiondb.open_store() as store:
        report = import_from(store, "codex")
        messages = store.transcript("codex-4b1f6f0e-old")
    assert (report.sessions, report.messages, report.malformed) == (1, 3, [])
    assert messages[1].tool_calls[0]["id"] == messages[2].tool_call_id == "call_o1"


def test_a_hermes_child_session_links_to_its_parent(home):
    rows = histories.hermes_rows("20261123_090000_parent", 1795424400.0, end="compression")
    child = histories.hermes_rows("20261123_091500_child", 1795425300.0, parent="20261123_090000_parent")
    histories.database(home / ".hermes" / "state.db", histories.HERMES,
                       {k: rows[k] + child[k] for k in ("sessions", "messages")})
    with sessiondb.open_store() as store:
        import_from(store, "hermes")
        linked = store.get_session("hermes-20261123_091500_child")
    assert (linked.parent_session_id, linked.parent_relation) == ("hermes-20261123_090000_parent", "continuation")


def test_an_oversize_record_is_reported_and_skipped_and_the_rest_is_imported(home):
    written = histories.claude_code(home)
    project = next(written.path.iterdir())
    other = "22222222-2222-4222-8222-222222222222"
    hostile = project / f"{other}.jsonl"
    branch = "b" * 70_000  # past MessageLimits.max_metadata_value_bytes (64 KiB)
    lines = [
        histories.claude_line("user", "h-0001", None, {"role": "user", "content": "first"}, sessionId=other, gitBranch=branch),
        histories.claude_line("assistant", "h-0002", "h-0001", {
            "id": "msg_h2", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "thinking", "thinking": "t" * (4 * 1024 * 1024 + 1), "signature": "s"}]},
            sessionId=other, gitBranch=branch),
        histories.claude_line("user", "h-0003", "h-0002", {"role": "user", "content": "last"}, sessionId=other, gitBranch=branch),
    ]
    hostile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with sessiondb.open_store() as store:
        report = import_from(store, "claude-code")
        session = store.get_session(f"claude-code-{other}")
        texts = [m.text for m in store.transcript(session.id)]
    reasons = [m["reason"] for m in report.malformed if m["file"] == str(hostile)]
    assert texts == ["first", "last"] and "git_branch" not in session.metadata
    assert session.metadata["original_id"] == other
    assert any("'git_branch' was left out" in r and "max_metadata_value_bytes" in r for r in reasons)
    assert any(m["line"] == 2 and "max_reasoning_bytes" in m["reason"] for m in report.malformed)
    assert report.messages == written.messages + 2


@pytest.mark.parametrize("source", list(SOURCES))
def test_an_imported_session_starts_when_its_source_did_not_when_it_was_imported(home, source):
    written = write(source, home)
    with sessiondb.open_store() as store:
        import_from(store, source, path_arg(source, written))
        stored = store.list_sessions(source=source, limit=1000).items
        for s in stored:
            first = store.transcript(s.id, include_compacted=True, limit=1)
            began = first[0].timestamp if first else None
            assert began is not None and s.started_at <= began, (s.id, s.started_at, began)
            assert s.last_activity_at is None or s.started_at <= s.last_activity_at


def test_a_codex_session_starts_at_its_session_meta(home):
    histories.codex(home)
    with sessiondb.open_store() as store:
        import_from(store, "codex")
        started = store.get_session(f"codex-{histories.CODEX_SESSION}").started_at
    assert started == datetime(2026, 11, 21, 10, 0, tzinfo=timezone.utc).timestamp()


# Where each tool's history holds a word that half a character (a JSON "\ud83d" escape, as a
# string cut inside an emoji is written) is put after: (file glob, table.column or None, word).
HALVED = {"codex": ("**/*.jsonl", None, "rounded"), "openai-agents": ("agents.db", "agent_messages.message_data", "Cloudy"),
          "langchain": ("chat.db", "message_store.message", "ryokan")}


@pytest.mark.parametrize("source", HALVED)
def test_text_holding_half_a_character_is_imported_exactly(home, source):
    written = write(source, home)
    pattern, column, word = HALVED[source]
    for path in (home / ".codex").glob(pattern) if column is None else [home / pattern]:
        if column is None:
            path.write_text(path.read_text().replace(word, word + " \\ud83d"))
        else:
            table, name = column.split(".")
            conn = apsw.Connection(str(path))
            conn.execute(f"UPDATE {table} SET {name} = replace({name}, ?, ?)", (word, word + " \\ud83d"))
            conn.close()
    with sessiondb.open_store() as store:
        report = import_from(store, source, path_arg(source, written))
        texts = [m.text for s in store.list_sessions(source=source, limit=1000).items
                 for m in store.transcript(s.id, include_compacted=True)]
    assert report.messages == written.messages and len(report.malformed) == written.malformed
    assert any(word + " \ud83d" in text for text in texts)
