"""The CLI's manners: --version, help for a bare `sessiondb`, JSON errors with --json,
`transcript --last/--limit/--since` and a pager on a terminal, hints that name the profile given,
and a progress bar only when a person watches."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time
from importlib import metadata

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main, render

SESSIONDB = [sys.executable, "-c", "from sessiondb.cli import main; main()"]


def run(home, *args, **kwargs):
    return CliRunner().invoke(main, ["--home", str(home), *args], **kwargs)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home, profile="work") as store:
        s = store.create_session("cli", title="Long talk")
        old = time.time() - 10 * 86400
        store.append(s.id, [{"uid": f"m{i}", "role": "user", "content": f"turn {i:04d}",
                             "timestamp": old if i < 1000 else None} for i in range(1200)])
    return home


def test_version_and_a_bare_command_print_and_succeed(home):
    version = run(home, "--version")
    assert version.exit_code == 0 and version.output.strip() == f"sessiondb {metadata.version('sessiondb')}"
    bare = CliRunner().invoke(main, [])
    assert bare.exit_code == 0 and "Commands:" in bare.output and "sessions" in bare.output


def test_with_json_errors_are_json_objects_with_the_same_exit_status(home):
    cases = [(["-p", "work", "sessions", "transcript", "nope", "--json"], 1, "not_found"),
             (["-p", "wrok", "sessions", "list", "--json"], 1, "no_such_profile"),
             (["-p", "work", "sessions", "list", "--limit", "0", "--json"], 2, "usage"),
             (["-p", "work", "sessions", "delete", "Long talk", "--json"], 1, "aborted")]
    for args, status, code in cases:
        plain = run(home, *[a for a in args if a != "--json"], input="n\n")
        as_json = run(home, *args, input="n\n")
        assert plain.exit_code == as_json.exit_code == status, args
        error = json.loads(as_json.stdout.splitlines()[-1])
        assert set(error) == {"code", "message", "detail"} and error["code"] == code, error


def test_hints_carry_the_profile_that_was_given(home):
    missing = run(home, "-p", "work", "sessions", "transcript", "nope")
    assert f"`sessiondb --home {home} -p work sessions list`" in missing.stderr


def shown(result):
    return [line.split()[-1] for line in result.output.splitlines() if line.startswith("turn ")]


def test_show_takes_the_last_n_a_limit_and_a_time(home):
    everything = run(home, "-p", "work", "sessions", "transcript", "Long talk")
    assert len(shown(everything)) == 1200  # read 500 at a time, all of it
    assert shown(run(home, "-p", "work", "sessions", "transcript", "Long talk", "--last", "3")) == ["1197", "1198", "1199"]
    assert shown(run(home, "-p", "work", "sessions", "transcript", "Long talk", "--limit", "2")) == ["0000", "0001"]
    recent = shown(run(home, "-p", "work", "sessions", "transcript", "Long talk", "--since", "1d"))
    assert len(recent) == 200 and recent[0] == "1000"
    assert shown(run(home, "-p", "work", "sessions", "transcript", "Long talk", "--since", "1d", "--last", "700",
                     "--limit", "2")) == ["1000", "1001"]
    as_json = json.loads(run(home, "-p", "work", "sessions", "transcript", "Long talk", "--last", "2", "--json").output)
    assert [m["uid"] for m in as_json["messages"]] == ["m1198", "m1199"]


def test_show_pages_through_a_pager_on_a_terminal(home, monkeypatch):
    paged: list[str] = []
    monkeypatch.setattr(render, "on_terminal", lambda: True)
    monkeypatch.setattr("click.echo_via_pager", lambda chunks: paged.extend(chunks))
    result = run(home, "-p", "work", "sessions", "transcript", "Long talk")
    assert result.exit_code == 0 and result.output == ""
    text = "".join(paged)
    assert text.count("turn ") == 1200 and "Long talk" in text and len(paged) > 10  # a batch at a time


def _on(args, stderr_is_a_terminal):
    """Run sessiondb with `args`; return its status and what it wrote on stderr (a pty or a pipe)."""
    if not stderr_is_a_terminal:
        done = subprocess.run(SESSIONDB + args, capture_output=True, text=True, timeout=120)
        return done.returncode, done.stderr
    leader, follower = pty.openpty()
    done = subprocess.run(SESSIONDB + args, stdout=subprocess.PIPE, stderr=follower, timeout=120)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty is drained and closed
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    return done.returncode, drawn.decode(errors="replace")


def test_long_commands_draw_progress_on_a_terminal_only(home, tmp_path):
    export = tmp_path / "work.jsonl"
    commands = [
        (["--home", str(home), "-p", "work", "sessions", "export", "-o", str(export)], ["exporting to"]),
        (["--home", str(tmp_path / "a"), "sessions", "import", str(export)], ["checking", "importing"]),
        (["--home", str(home), "-p", "work", "doctor", "--deep"], ["checking integrity"]),
        (["recover", "--source", str(home / "profiles" / "work" / "state.db"), "--inspect-only"], ["reading what survives"]),
    ]
    for args, drawn_words in commands:
        status, drawn = _on(args, stderr_is_a_terminal=True)
        assert status == 0 and all(w in drawn for w in drawn_words), (args, drawn)
    export.unlink()
    for args, _ in commands:
        if "import" in args:
            args[1] = str(tmp_path / "b")
        status, piped = _on(args, stderr_is_a_terminal=False)
        assert status == 0 and piped == "", (args, piped)


def test_the_doctor_leads_with_the_problem_and_the_first_step(home):
    report = run(home, "-p", "work", "doctor")
    healthy_first = report.output.splitlines()[0]
    assert report.exit_code == 0 and healthy_first.startswith("store")
    empty = home / "nothing-here"
    missing = run(empty, "doctor")
    lines = missing.output.splitlines()
    assert missing.exit_code == 1 and lines[0] == f"problem      {empty / 'state.db'} does not exist"
    assert lines[1].startswith("first step   ") or lines[1].startswith("store")


def test_the_license_is_an_spdx_string_for_a_setuptools_that_reads_it():
    # A TOML table here makes setuptools print a deprecation warning on every install;
    # the string form needs setuptools 77 or newer.
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == "MIT"
    assert "setuptools>=77" in project["build-system"]["requires"]
