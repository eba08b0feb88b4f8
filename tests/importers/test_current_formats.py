"""Each importer on files in its tool's current format (formats/, whose README says where
each format comes from): what the tool wrote is kept, compactions, titles, thinking and the
tools the API's server runs included."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import sessiondb
from sessiondb.importers import import_from

FORMATS = Path(__file__).parent / "formats"
CODEX = "codex-019ac4d2-7e31-7b40-9c1e-5a8f2d63b0e4"
CLAUDE = "claude-code-7d2e9b41-3c5a-4f08-b6e2-91a4d0c7f35b"


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "store.db") as store:
        yield store


def imported(store, tool: str, tmp_path: Path):
    copy = shutil.copytree(FORMATS / tool, tmp_path / tool)  # an import writes nothing beside the history, but may
    report = import_from(store, tool, copy)
    assert report.malformed == [] and report.sessions == 1
    return report


def test_a_codex_compaction_by_the_server_keeps_the_history_it_left(store, tmp_path):
    report = imported(store, "codex", tmp_path)
    messages = store.transcript(CODEX, include_compacted=True)
    assert report.messages == len(messages) == 9
    (compaction,) = [m for m in messages if m.display_kind == "compaction_summary"]
    assert compaction.role == "system"
    assert compaction.text == "user: Why does the nightly export time out?"
    items = [part["item"] for part in compaction.content]
    assert [item["type"] for item in items] == ["message", "compaction"]
    assert items[1]["encrypted_content"] == "gAAAAABpKV2q_demo_compaction_summary_ciphertext"
    assert [m.text for m in messages[-2:]] == ["Raise it to 120 seconds.", "Done: TIMEOUT = 120 in export.py."]
    session = store.get_session(CODEX)
    assert session.metadata["model"] == "gpt-5.1-codex" and session.metadata["git_branch"] == "main"
    assert store.usage(CODEX).output_tokens == 412


def test_a_claude_code_title_set_with_rename_wins_over_the_summary(store, tmp_path):
    imported(store, "claude-code", tmp_path)
    assert store.get_session(CLAUDE).title == "httpx 0.28 migration"


def test_a_renamed_claude_code_session_takes_the_new_title_on_the_next_import(store, tmp_path):
    copy = shutil.copytree(FORMATS / "claude-code", tmp_path / "claude-code")
    transcript = next(copy.rglob("*.jsonl"))
    lines = transcript.read_text(encoding="utf-8").splitlines(keepends=True)
    transcript.write_text("".join(line for line in lines if '"custom-title"' not in line), encoding="utf-8")
    import_from(store, "claude-code", copy)
    assert store.get_session(CLAUDE).title == "HTTPX 0.28 breaking changes research"
    with transcript.open("a", encoding="utf-8") as f:
        f.write(next(line for line in lines if '"custom-title"' in line))
    import_from(store, "claude-code", copy)
    assert store.get_session(CLAUDE).title == "httpx 0.28 migration"
    store.set_title(CLAUDE, "my own name")  # a title set in sessiondb is never replaced by an import
    import_from(store, "claude-code", copy)
    assert store.get_session(CLAUDE).title == "my own name"


def test_claude_code_thinking_is_kept_as_reasoning_and_a_server_tool_as_an_answered_call(store, tmp_path):
    report = imported(store, "claude-code", tmp_path)
    messages = store.transcript(CLAUDE)
    assert report.messages == len(messages) == 5
    question, thought, call, result, answer = messages
    assert thought.role == "assistant" and thought.reasoning.startswith("The user asks about the httpx 0.28 migration")
    (tool_call,) = call.tool_calls
    assert tool_call["id"] == "srvtoolu_01Bq8xWm3TnV5kRz7YpL2cDf"
    assert tool_call["function"]["name"] == "web_search"
    assert "httpx 0.28.0 changelog" in tool_call["function"]["arguments"]
    assert result.role == "tool" and result.tool_call_id == tool_call["id"] and result.tool_name == "web_search"
    assert result.text.splitlines() == ["Changelog - HTTPX — https://www.python-httpx.org/changelog/",
                                        "Release Version 0.28.0 · encode/httpx — "
                                        "https://github.com/encode/httpx/releases/tag/0.28.0"]
    assert answer.text.startswith("httpx 0.28 removes the deprecated `proxies=` argument")
    assert store.usage(CLAUDE).calls == 1  # one response, however many lines it was written as
