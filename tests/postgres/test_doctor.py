"""The doctor of a store on a PostgreSQL server: it examines without opening the store,
names what broke and the first step, and repairs what is derived from the messages
(search words, indexes, counters) beside running writers, never the messages themselves."""

from __future__ import annotations

import json
import threading
import time

import psycopg
import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.errors import ServerUnreachable
from sessiondb.store.postgres import migrations
from sessiondb.store.postgres.migrations import MIGRATIONS


@pytest.fixture
def stored(pg_url, pg_schema):
    """A store of one session of two messages: its URL and the session's id."""
    url = f"{pg_url}&schema={pg_schema}"
    with sessiondb.open_store(url) as store:
        s = store.create_session("cli", title="Trip")
        store.append(s.id, [{"uid": "1", "role": "user", "content": "a ryokan in kyoto"},
                            {"uid": "2", "role": "assistant", "content": "two nights in Gion"}])
    return url, s.id


@pytest.fixture
def damage(pg_url, pg_schema):
    """Run a statement on the store's schema behind sessiondb's back."""
    def run(statement: str) -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{pg_schema}"')
            conn.execute(statement)
    return run


def test_a_sound_store_is_healthy_and_its_connections_are_listed(stored, pg_schema):
    url, _ = stored
    with sessiondb.open_store(url) as store:
        store.stats()  # the pool's one connection, kept open
        report = sessiondb.open_doctor(url).examine()
    assert report.healthy and report.damage == "none" and report.exists
    assert len(report.connections) == 1 and report.connections[0].startswith("server process ")
    assert report.migrations == {"applied": len(MIGRATIONS), "pending": [], "unknown": []}
    assert report.checked == {"sessions": 1, "messages": 2, "leases": 0, "usage": 0}  # usage: its orphans
    assert report.location.endswith(f"#{pg_schema}") and report.server_version.startswith("15")


def test_examining_a_store_of_an_older_release_migrates_nothing(pg_url, pg_schema, monkeypatch):
    url = f"{pg_url}&schema={pg_schema}"
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:9])
    sessiondb.open_store(url).close()
    monkeypatch.undo()
    report = sessiondb.open_doctor(url).examine()
    assert report.healthy and report.migrations["pending"] == [name for name, _ in MIGRATIONS[9:]]
    assert any("the next open of the store applies them" in note for note in report.notes)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{pg_schema}".schema_migrations').fetchone()[0] == 9


def test_a_store_not_made_yet_is_reported_and_not_made(pg_url, pg_schema):
    url = f"{pg_url}&schema={pg_schema}"
    report = sessiondb.open_doctor(url).examine()
    assert not report.exists and report.healthy
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", (pg_schema,)).fetchone()[0] is None


def test_stale_words_and_miscounted_sessions_are_named_and_the_fix_heals_them(stored, damage):
    url, sid = stored
    damage("UPDATE messages SET words = NULL WHERE uid = '1'")  # the trigger fires only on a text's change
    damage("UPDATE sessions SET message_count = 99")
    doctor = sessiondb.open_doctor(url)
    report = doctor.examine()
    assert report.damage == "counters" and not report.healthy
    assert any(f"session {sid} counts 99 messages" in p for p in report.problems)
    assert any("stale search words" in p for p in report.problems)
    assert "doctor --repair" in report.steps[0]
    with sessiondb.open_store(url) as store:
        assert store.search("ryokan") == []  # what the damage costs: the message is not found
    fixed = doctor.repair()
    assert fixed.healthy and fixed.damage == "none"
    assert fixed.repair["actions"] == ["recomputed the search words of 1 message(s)", f"recounted session {sid}"]
    with sessiondb.open_store(url) as store:
        assert [h.session_id for h in store.search("ryokan")] == [sid]
        assert store.get_session(sid).message_count == 2 and [m.uid for m in store.transcript(sid)] == ["1", "2"]


def test_an_invalid_index_is_rebuilt(stored, damage):
    url, _ = stored
    damage("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'messages_words'::regclass")
    doctor = sessiondb.open_doctor(url)
    assert doctor.examine().damage == "index"
    assert "rebuilt the index messages_words" in doctor.repair().repair["actions"]
    assert doctor.examine().healthy


def test_rows_breaking_an_invariant_are_named_and_left_as_written(stored, damage):
    url, sid = stored
    damage("UPDATE messages SET seq = 0 WHERE uid = '2'")  # seq falls in commit order
    doctor = sessiondb.open_doctor(url)
    report = doctor.repair()
    assert report.damage == "records" and report.repair["actions"] == []
    assert "sessions export --session ID" in report.steps[-1]
    with sessiondb.open_store(url) as store:
        assert [m.seq for m in store.transcript(sid)] == [1, 0]


def test_a_schema_from_a_newer_sessiondb_says_to_upgrade(stored, damage):
    url, _ = stored
    damage("INSERT INTO schema_migrations VALUES ('9999_future', 0)")
    damage("UPDATE sessions SET message_count = 99")
    report = sessiondb.open_doctor(url).repair()
    assert not report.healthy and "newer sessiondb" in report.problems[0] and "upgrade" in report.steps[0]
    assert report.repair["actions"] == []  # its schema may mean what this release cannot tell


def test_a_recount_waits_for_an_append_in_flight_and_counts_it(stored, damage, pg_url, pg_schema):
    url, sid = stored
    damage("UPDATE sessions SET message_count = 99")
    with psycopg.connect(pg_url) as append:  # an append in flight: the session's row lock held, a row written
        append.execute(f'SET search_path TO "{pg_schema}"')
        append.execute("SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (sid,))
        append.execute("INSERT INTO messages(session_id, uid, seq, role, content, state, \"timestamp\") "
                       "VALUES (%s, 'late', 3, 'user', 'in flight', 'active', 0)", (sid,))
        append.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = %s", (sid,))
        repaired: list = []
        fixing = threading.Thread(target=lambda: repaired.append(sessiondb.open_doctor(url).repair()))
        fixing.start()
        with psycopg.connect(pg_url) as watcher:  # the repair is waiting for the row lock
            while not watcher.execute("SELECT count(*) FROM pg_locks WHERE NOT granted").fetchone()[0]:
                assert fixing.is_alive()
                time.sleep(0.01)
        append.commit()
        fixing.join(60)
    assert f"recounted session {sid}" in repaired[0].repair["actions"]
    with sessiondb.open_store(url) as store:
        assert store.get_session(sid).message_count == 3 and store.verify().problems == []


def test_an_unreachable_server_is_one_line_from_the_cli(tmp_path):
    url = f"postgresql://nobody@/nothing?host={tmp_path}"
    with pytest.raises(ServerUnreachable):
        sessiondb.open_doctor(url).examine()
    result = CliRunner().invoke(main, ["--store", url, "doctor"])
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert "could not be reached" in line


def test_the_cli_doctor_reports_and_fixes_with_the_store_spelled_as_given(stored, damage):
    url, _ = stored
    damage("UPDATE sessions SET message_count = 99")
    run = lambda *args: CliRunner().invoke(main, ["--store", url, "doctor", *args])  # noqa: E731
    found = run()
    assert found.exit_code == 1
    assert found.output.splitlines()[1].startswith("first step   run `sessiondb --store 'postgresql://")
    assert "damage       counters" in found.output
    assert run("--repair").exit_code == 0
    report = json.loads(run("--json").output)
    assert report["healthy"] and report["migrations"]["pending"] == []
