"""Processes opening a new store at the same moment (S-56: a gateway's profiles starting together,
two workers of a fleet): each either makes the store or finds the one another has just made,
and none is refused. Two steps of a first open read and then change what another opener
may be changing: the journal mode's switch to WAL, and the check that the file is ours."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb.store.sqlite import connect as connect_module
from sessiondb.store.sqlite.connect import configure_writer, connect
from sessiondb.store.sqlite.migrations import MIGRATIONS, check_ownership, migrate
from sessiondb.store.sqlite.safety.schema import refuse_damaged_schema


@pytest.mark.parametrize("made", [False, True], ids=["a new file", "a file just made"])
def test_the_switch_to_wal_waits_for_another_opener_instead_of_failing(tmp_path, monkeypatch, made):
    # On a file not made yet the wait is the page map's (chosen before the first page: the
    # other, an opener of an earlier release, makes the file without one as it commits); on
    # a file the other has just made (with a map) it is the switch's own.
    db = tmp_path / "state.db"
    other = apsw.Connection(str(db))
    if made:
        other.execute("PRAGMA auto_vacuum=INCREMENTAL")
        other.execute("CREATE TABLE made(x)")
    other.execute("BEGIN IMMEDIATE")  # another opener, in the middle of making the file
    ours = connect(db, patience=0.05)  # its own busy handler gives up at once: the steps' wait is what is tested
    waits = []

    def waiting(patience):  # the wait given while the other holds the file: it finishes
        def wait(attempt: int) -> bool:
            waits.append(attempt)
            other.execute("COMMIT")
            return True
        return wait

    monkeypatch.setattr(connect_module, "busy_handler", waiting)
    assert configure_writer(ours, db, "full", patience=5.0) == "wal"
    assert waits == [0], "the other opener should have held the file as the switch began"
    assert ours.execute("PRAGMA auto_vacuum").fetchone()[0] == (2 if made else 0)  # as the file was made
    ours.close()
    other.close()


@pytest.mark.parametrize("moment", [0, 1, 2])
def test_a_first_migration_committed_during_the_ownership_check_is_not_taken_for_a_foreign_file(tmp_path, moment):
    db = tmp_path / "state.db"
    ours, other = connect(db, patience=5.0), connect(db, patience=5.0)
    statements = []

    def other_migrates_at_the_moment(cursor, sql, bindings) -> bool:
        if len(statements) == moment:
            migrate(other, MIGRATIONS[:1])  # sets the application id beside its tables
        statements.append(sql)
        return True

    ours.exec_trace = other_migrates_at_the_moment
    check_ownership(ours)
    ours.exec_trace = None
    assert migrate(ours)  # the later migrations, over the other's first
    ours.close()
    other.close()


@pytest.mark.parametrize("moment", [0, 1, 2, 3])
def test_a_migration_committed_during_the_schema_check_is_not_taken_for_a_half_migrated_file(tmp_path, moment):
    db = tmp_path / "state.db"
    ours, other = connect(db, patience=5.0), connect(db, patience=5.0)
    other.execute("PRAGMA journal_mode=WAL")  # the other opener switched the file before migrating
    migrate(other, MIGRATIONS[:1])
    statements = []

    def other_migrates_at_the_moment(cursor, sql, bindings) -> bool:
        if len(statements) == moment:
            migrate(other, MIGRATIONS[:2])  # the objects of the next migration and its record
        statements.append(sql)
        return True

    ours.exec_trace = other_migrates_at_the_moment
    refuse_damaged_schema(ours, db)
    ours.exec_trace = None
    assert len(statements) > moment, "the other opener should have migrated during the check"
    assert migrate(ours)  # the later migrations, over the other's
    ours.close()
    other.close()


def test_an_error_that_ends_the_schema_check_s_snapshot_is_the_error_reported(tmp_path):
    conn = connect(tmp_path / "state.db", patience=5.0)
    migrate(conn)

    def ended_by_the_engine(cursor, sql, bindings) -> bool:
        if "sqlite_schema" in sql and "rootpage" in sql:  # the second read of the check
            cursor.connection.execute("ROLLBACK")  # as SQLite ends it on an I/O error or a full disk
            return False  # and the read fails
        return True

    conn.exec_trace = ended_by_the_engine
    with pytest.raises(apsw.ExecTraceAbort):  # not a failed COMMIT of a transaction already gone
        refuse_damaged_schema(conn, tmp_path / "state.db")
    conn.exec_trace = None
    assert conn.getautocommit()
    conn.close()


OPEN_AND_WRITE = (
    "import sys, sessiondb\n"
    "print('ready', flush=True)\n"
    "sys.stdin.readline()\n"
    "with sessiondb.open_store(sys.argv[1]) as store:\n"
    "    sid = store.create_session('cli').id\n"
    "    store.append(sid, {'role': 'user', 'content': 'hello from ' + sys.argv[2]})\n"
    "print(sid)\n"
)


def test_processes_opening_a_new_store_together_all_write(tmp_path):
    db = tmp_path / "state.db"
    names = [f"profile{i}" for i in range(4)]
    checkout = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    openers = [subprocess.Popen([sys.executable, "-c", OPEN_AND_WRITE, str(db), name], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=checkout)
               for name in names]
    assert [opener.stdout.readline() for opener in openers] == ["ready\n"] * len(names)
    for opener in openers:  # all imported: now they open together
        opener.stdin.write("go\n")
        opener.stdin.flush()
    made = {}
    for name, opener in zip(names, openers):
        out, err = opener.communicate(timeout=120)
        assert opener.returncode == 0, err
        made[name] = out.strip()
    with sessiondb.open_store(db) as store:
        for name, sid in made.items():
            assert [m.content for m in store.transcript(sid)] == [f"hello from {name}"]
