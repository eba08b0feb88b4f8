"""`connect.transaction`, the one BEGIN ... COMMIT of the SQLite backend's own transactions
(migrations, the schema check, the search index), and the reader's release, which ends every
read's snapshot: the error that ends a transaction is the error raised. SQLite ends a transaction itself on an I/O error or a full disk; a ROLLBACK
sent after that fails, and its error would hide the one open, the doctor and the index's
healing classify."""

from __future__ import annotations

import apsw
import pytest

from sessiondb.store.sqlite.connect import connect, transaction


@pytest.fixture
def conn(tmp_path):
    conn = connect(tmp_path / "t.db", patience=5.0)
    conn.execute("CREATE TABLE t(x)")
    yield conn
    conn.close()


def rows(conn):
    return [x for (x,) in conn.execute("SELECT x FROM t")]


def test_a_block_that_ends_is_committed_and_one_that_raises_is_rolled_back(conn):
    with transaction(conn, "BEGIN IMMEDIATE"):
        conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(ValueError):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (2)")
            raise ValueError("the block failed")
    assert rows(conn) == [1] and not conn.in_transaction


def test_the_error_of_a_transaction_the_engine_ended_is_the_one_raised(conn):
    with pytest.raises(apsw.FullError):
        with transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("ROLLBACK")  # as SQLite ends it on a full disk, and then raises:
            raise apsw.FullError("database or disk is full")
    assert rows(conn) == [] and not conn.in_transaction


def test_a_block_may_roll_back_itself_when_it_finds_nothing_to_do(conn):
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("ROLLBACK")
    assert rows(conn) == [] and not conn.in_transaction


def test_a_read_the_engine_ended_on_a_full_disk_reports_the_full_disk(tmp_path):
    from sessiondb.errors import DiskFull
    from sessiondb.store.sqlite import SQLiteBackend

    backend = SQLiteBackend(tmp_path / "state.db")

    def ended_by_the_engine(rows):
        rows._conn.execute("ROLLBACK")  # as SQLite ends the snapshot, then raises:
        raise apsw.FullError("database or disk is full")

    try:
        with pytest.raises(DiskFull):  # not a StorageError for a COMMIT with no transaction
            backend.read(ended_by_the_engine)
    finally:
        backend.close()
