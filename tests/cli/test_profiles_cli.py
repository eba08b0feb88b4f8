"""Profiles are created on purpose: a mistyped `-p` is refused in one line and leaves
nothing behind; `profiles list | create | delete` manage them, and delete refuses while
another process holds the store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main

READS = [["sessions", "list"], ["sessions", "stats"], ["sessions", "transcript", "Trip"], ["sessions", "search", "kyoto"],
         ["doctor"], ["sessions", "export"], ["backup", "copy.db"]]


def run(home, *args, input=None):
    return CliRunner().invoke(main, ["--home", str(home), *args], input=input)


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home, profile="work") as store:
        s = store.create_session("cli", title="Trip")
        store.append(s.id, {"uid": "1", "role": "user", "content": "kyoto in april"})
    return home


@pytest.mark.parametrize("args", READS, ids=" ".join)
def test_a_mistyped_profile_is_one_line_saying_how_to_create_it_and_creates_nothing(home, args, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)  # where `backup copy.db` would write
    result = run(home, "-p", "wrok", *args)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "no profile 'wrok'" in lines[0] and "(profiles: work)" in lines[0]
    assert f"`sessiondb --home {home} profiles create wrok`" in lines[0]
    assert not (home / "profiles" / "wrok").exists() and not (tmp_path / "copy.db").exists()


def test_an_import_that_fails_or_only_checks_creates_no_profile_and_one_that_works_does(home, tmp_path):
    export = tmp_path / "work.jsonl"
    assert run(home, "-p", "work", "sessions", "export", "-o", str(export)).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "nothing"}\n', encoding="utf-8")
    assert run(home, "-p", "new", "sessions", "import", str(bad)).exit_code == 1
    assert run(home, "-p", "new", "sessions", "import", str(export), "--dry-run").exit_code == 0
    assert not (home / "profiles" / "new").exists()
    assert run(home, "-p", "new", "sessions", "import", str(export)).exit_code == 0
    assert "Trip" in run(home, "-p", "new", "sessions", "list").output


def test_profiles_are_listed_created_and_deleted_after_asking(home):
    listed = json.loads(run(home, "profiles", "list", "--json").output)
    assert [p["name"] for p in listed] == ["main", "work"]
    assert run(home, "profiles", "create", "play").exit_code == 0
    assert run(home, "profiles", "create", "play").exit_code == 1  # already there
    assert run(home, "-p", "play", "sessions", "list").output.strip() == "no sessions"
    declined = run(home, "profiles", "delete", "play", input="n\n")
    assert declined.exit_code == 1 and (home / "profiles" / "play").is_dir()
    assert run(home, "profiles", "delete", "play", input="y\n").exit_code == 0
    assert not (home / "profiles" / "play").exists()
    assert run(home, "profiles", "delete", "main", "--yes").exit_code == 1
    assert run(home, "profiles", "delete", "nope", "--yes").exit_code == 1


HOLDER = """
import sys, sessiondb
with sessiondb.open_store(home=sys.argv[1], profile="work") as store:
    store.stats()
    print("ready", flush=True)
    sys.stdin.read()
"""


def test_deleting_a_profile_is_refused_while_another_process_holds_its_store(home):
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(home)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        refused = run(home, "profiles", "delete", "work", "--yes", "--json")
        assert refused.exit_code == 1
        error = json.loads(refused.output)
        assert error["code"] == "store_held" and f"PID {holder.pid}" in error["message"]
        assert (home / "profiles" / "work" / "state.db").exists()
    finally:
        holder.communicate("", timeout=30)
    assert run(home, "profiles", "delete", "work", "--yes").exit_code == 0
