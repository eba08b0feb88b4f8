"""`sessiondb import --from TOOL [PATH]`: the report, --json, and one-line errors."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import histories
import sessiondb
from sessiondb.cli import main

SESSIONDB = Path(sys.executable).with_name("sessiondb")

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


def test_on_a_terminal_a_progress_line_counts_what_is_stored(home, isolated_home):
    histories.claude_code(home)
    leader, follower = pty.openpty()
    env = dict(os.environ, HOME=str(home), SESSIONDB_HOME=str(isolated_home), TERM="xterm", COLUMNS="120")
    env.pop("NO_COLOR", None)
    result = subprocess.run([str(SESSIONDB), "import", "--from", "claude-code"], env=env, stdout=subprocess.PIPE,
                            stderr=follower, timeout=120)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end is closed: all was read
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert result.returncode == 0
    assert b"new message(s)" in seen  # drawn on the terminal, not printed into stdout
    assert b"new message(s)" not in result.stdout
