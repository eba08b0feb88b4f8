"""No silent creation, no long waits: a mistyped --store path creates nothing, a server whose
host name does not exist is refused at its first attempt, a busy port is said before
anything else, and both imports create a new profile only by importing into it."""

from __future__ import annotations

import json
import socket

from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.store.postgres import connect

CODEX_LINE = {"timestamp": "2026-05-01T10:00:00Z", "type": "session_meta",
              "payload": {"id": "0196a0b0-0000-7000-8000-000000000001", "timestamp": "2026-05-01T10:00:00Z",
                          "cwd": "/src/app", "originator": "codex_cli_rs", "cli_version": "0.50.0"}}


def run(*args, **kwargs):
    return CliRunner().invoke(main, list(args), **kwargs)


def test_a_mistyped_store_path_is_refused_and_creates_nothing(tmp_path):
    with sessiondb.open_store(tmp_path / "real.db") as store:
        store.create_session("cli", title="kept")
    typo = tmp_path / "rael.db"
    for command in (["sessions", "list"], ["sessions", "transcript", "kept"], ["doctor"], ["sessions", "stats"]):
        result = run("--store", str(typo), *command)
        assert result.exit_code == 1, (command, result.output)
        assert f"no store at {typo}: check the path" in result.output
    as_json = json.loads(run("--store", str(typo), "sessions", "list", "--json").stdout)
    assert as_json["code"] == "not_found"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in tmp_path.iterdir()
                                                                if p.name.startswith("real.db"))
    assert "kept" in run("--store", str(tmp_path / "real.db"), "sessions", "list").output


def test_an_import_creates_the_store_file_it_is_given_only_when_it_writes(tmp_path, monkeypatch):
    with sessiondb.open_store(tmp_path / "from.db") as store:
        store.create_session("cli", title="moved")
    exported = tmp_path / "export.jsonl"
    assert run("--store", str(tmp_path / "from.db"), "sessions", "export", "-o", str(exported)).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    new = tmp_path / "new.db"
    assert run("--store", str(new), "sessions", "import", "--dry-run", str(exported)).exit_code == 0
    assert run("--store", str(new), "sessions", "import", str(bad)).exit_code == 1
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))  # no ~/.codex: the default location is missing
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert run("--store", str(new), "import", "--from", "codex").exit_code == 1
    assert not any(p.name.startswith("new.db") for p in tmp_path.iterdir())  # checked against a store in memory
    assert run("--store", str(new), "sessions", "import", str(exported)).exit_code == 0
    assert "moved" in run("--store", str(new), "sessions", "list").output


def codex_history(root):
    day = root / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-05-01T10-00-00-0196a0b0-0000-7000-8000-000000000001.jsonl").write_text(
        json.dumps(CODEX_LINE) + "\n" + json.dumps(
            {"timestamp": "2026-05-01T10:00:01Z", "type": "response_item",
             "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}})
        + "\n")
    return root


def test_both_imports_treat_a_new_profile_the_same_way(tmp_path, monkeypatch):
    home = tmp_path / "home"
    history = codex_history(tmp_path / "codex")
    imported = run("--home", str(home), "-p", "fresh", "import", "--from", "codex", str(history))
    assert imported.exit_code == 0, imported.output
    assert (home / "profiles" / "fresh").is_dir()
    # An import that is refused leaves no profile behind, as `sessions import` of a bad file does.
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))  # no ~/.codex: the default location is missing
    refused = run("--home", str(home), "-p", "other", "import", "--from", "codex")
    assert refused.exit_code == 1 and "no codex history" in refused.output
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert run("--home", str(home), "-p", "other2", "sessions", "import", str(bad)).exit_code == 1
    assert sorted(p.name for p in (home / "profiles").iterdir()) == ["fresh"]


def test_a_host_name_that_does_not_exist_is_refused_at_the_first_attempt(monkeypatch):
    attempts = []
    real_connect = connect.psycopg.connect

    def counted(*args, **kwargs):
        attempts.append(args)
        return real_connect(*args, **kwargs)

    def no_such_name(host, *args, **kwargs):  # the answer DNS gives a name nobody registered
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(connect.psycopg, "connect", counted)
    monkeypatch.setattr(connect.socket, "getaddrinfo", no_such_name)
    result = run("--store", "postgresql://sessiondb@nohost.invalid/sessions", "sessions", "list")
    assert result.exit_code == 1
    assert "the host name 'nohost.invalid' in postgresql://sessiondb@nohost.invalid/sessions does not resolve" \
        in result.output
    assert len(attempts) == 1  # not retried for the patience (30 s)


def test_a_resolver_that_cannot_answer_now_is_not_taken_for_a_missing_name(monkeypatch):
    def try_again(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(connect.socket, "getaddrinfo", try_again)
    assert connect.unknown_hosts("host=db.example port=5432") == []
    assert connect.unknown_hosts("host=/var/run/postgresql") == []


def test_serve_on_a_busy_port_says_so_before_anything_else(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("--home", str(tmp_path / "home"), "serve", "--port", str(port))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == (f"Error: cannot serve on 127.0.0.1:{port}: another program is listening on "
                                     "that port; choose another with --port")


def test_a_mistyped_path_to_migrate_from_creates_nothing(tmp_path):
    result = run("migrate", "--from", str(tmp_path / "nope.db"), "--to", str(tmp_path / "new.db"))
    assert result.exit_code == 1 and f"no store at {tmp_path / 'nope.db'}: check the path" in result.output
    assert list(tmp_path.iterdir()) == []
