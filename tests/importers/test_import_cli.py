"""`sessiondb import --from TOOL [PATH]`: the report, --json, and one-line errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

import histories
import sessiondb
from sessiondb.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_import_prints_the_report_and_names_each_malformed_line(home):
    written = histories.claude_code(home)
    first = run("import", "--from", "claude-code")
    again = run("import", "--from", "claude-code")
    assert first.exit_code == 0, first.output
    assert "imported 2 claude-code session(s) (2 new): 9 message(s), 0 already stored and skipped, 1 malformed" in first.output
    assert f"{histories.SESSION}.jsonl:6: not JSON" in first.output  # on stderr, mixed in by the runner
    assert "0 message(s), 9 already stored and skipped" in again.output
    with sessiondb.open_store() as store:
        assert store.stats().messages == written.messages
        assert {s.source for s in store.list_sessions().items} == {"claude-code"}


def test_import_json_is_the_library_report(home):
    written = histories.langchain(home / "chat.db")
    result = run("import", "--from", "langchain", str(written.path), "--json")
    report = json.loads(result.output)
    assert report["source"] == "langchain" and report["messages"] == written.messages and report["malformed"] == []


def test_a_source_without_a_default_needs_its_path_and_an_unknown_source_is_a_usage_error(home):
    missing = run("import", "--from", "openai-agents")
    assert missing.exit_code == 1 and "give the database's PATH" in missing.output
    unknown = run("import", "--from", "cursor")
    assert unknown.exit_code == 2 and "cursor" in unknown.output
    nothing = run("import", "--from", "codex")
    assert nothing.exit_code == 1 and "no codex history at" in nothing.output


def test_sessions_search_filters_and_shows_by_the_tool_a_session_came_from(home):
    histories.claude_code(home)
    histories.codex(home)
    assert run("import", "--from", "claude-code").exit_code == 0
    assert run("import", "--from", "codex").exit_code == 0
    both = json.loads(run("sessions", "search", "invoice OR upload", "--json").output)
    codex = json.loads(run("sessions", "search", "invoice OR upload", "--source", "codex", "--json").output)
    shown = run("sessions", "search", "invoice OR upload", "--source", "claude-code").output
    assert {h["session_source"] for h in both} == {"claude-code", "codex"}
    assert codex and {h["session_source"] for h in codex} == {"codex"}
    assert "claude-code · user" in shown and "codex ·" not in shown
