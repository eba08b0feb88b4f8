"""Index damage is not database damage, and only index damage is (S-16, S-17): a failure is
the search index's when SQLite says SQLITE_CORRUPT_VTAB, or, with no result code at all,
when its corruption text names one of sessiondb's FTS objects exactly; anything else
corrupt, a bare SQLITE_CORRUPT naming the index included, fails closed. The errors are
real: each is raised by SQLite reading a file damaged on the spot."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from sessiondb.errors import Cause, FTS_OBJECTS, classify
from sessiondb.store.sqlite.migrations import MIGRATIONS, migrate


def raised(db: Path, sql: str) -> apsw.Error:
    conn = apsw.Connection(str(db))
    try:
        conn.execute(sql).fetchall()
    except apsw.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError(f"{sql!r} on {db} did not fail")


def edit_schema(db: Path, sql: str) -> None:
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(sql)
    conn.close()


def plain(tmp: Path) -> Path:
    db = tmp / "plain.db"
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE drafts(body); CREATE TABLE other(x)")
    conn.execute("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) "
                 "INSERT INTO drafts SELECT printf('%.500c', 'x') FROM n")
    conn.close()
    return db


def store(tmp: Path) -> Path:
    """A store as the releases before 0006_search_off_path made it, with the search index's
    FTS5 tables in the file (the doctor and the migration still meet such stores)."""
    db = tmp / "state.db"
    conn = apsw.Connection(str(db))
    try:
        migrate(conn, [m for m in MIGRATIONS if m[0] < "0006"])
        with conn:
            conn.execute("INSERT INTO sessions(id, source, started_at) VALUES ('s', 'cli', 1.0)")
            conn.executemany("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                             "VALUES ('s', ?, ?, 'user', ?, 1.0)",
                             [(f"u{i}", i, f"hello world number {i} " * 20) for i in range(200)])
    finally:
        conn.close()
    return db


def garbled_table_pages(tmp):
    db = plain(tmp)
    with open(db, "r+b") as f:
        f.seek(4096 * 2), f.write(b"\xff" * 4096 * 3)
    return raised(db, "SELECT count(*) FROM drafts")


def schema_edited(make, edit, query):
    """A file from `make` whose schema `edit` changed, then read with `query`."""
    def damage(tmp):
        db = make(tmp)
        edit_schema(db, edit)
        return raised(db, query)
    return damage


def not_a_database(tmp):
    db = tmp / "noise.db"
    db.write_bytes(b"drafts of fts " * 1000)
    return raised(db, "SELECT * FROM sqlite_schema")


GARBLE_INDEX = "UPDATE messages_fts_data SET block = randomblob(length(block)) WHERE id > 10"
drafts_schema_garbled = schema_edited(
    plain, "UPDATE sqlite_schema SET sql = 'CREATE TABLE drafts(body' WHERE name = 'drafts'", "SELECT * FROM other")
drafts_schema_duplicated = schema_edited(
    plain, "INSERT INTO sqlite_schema SELECT * FROM sqlite_schema WHERE name = 'drafts'", "SELECT * FROM other")
index_blocks_garbled = schema_edited(
    store, GARBLE_INDEX, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'hello'")
index_blocks_garbled_read_by_rank = schema_edited(
    store, GARBLE_INDEX, "SELECT rowid FROM messages_fts WHERE messages_fts MATCH 'number' ORDER BY rank LIMIT 3")
index_schema_entry_garbled = schema_edited(
    store, "UPDATE sqlite_schema SET sql = 'CREATE VIRTUAL TABLE messages_fts USING' WHERE name = 'messages_fts'",
    "SELECT count(*) FROM messages")


def index_named_under_a_bare_code(tmp):
    """The index's own report of its damage, reaching us without the VTAB code (a wrapper
    that kept only the primary code)."""
    exc = index_blocks_garbled(tmp)
    exc.extendedresult = 11
    return exc


CASES = [
    # how SQLite was made to fail, its extended code, words its text holds, the cause, and
    # the cause of the same text reaching us without any result code
    pytest.param(garbled_table_pages, 11, "malformed", Cause.CORRUPT, Cause.CORRUPT, id="garbled_table_pages"),
    pytest.param(drafts_schema_garbled, 11, "drafts", Cause.CORRUPT, Cause.CORRUPT, id="drafts_schema_garbled"),
    pytest.param(drafts_schema_duplicated, 11, "drafts already exists", Cause.CORRUPT, Cause.CORRUPT,
                 id="drafts_schema_duplicated"),
    pytest.param(not_a_database, 26, "not a database", Cause.CORRUPT, Cause.CORRUPT, id="not_a_database"),
    pytest.param(index_blocks_garbled, 267, '"messages_fts"', Cause.FTS_INDEX, Cause.FTS_INDEX,
                 id="index_blocks_garbled"),
    pytest.param(index_blocks_garbled_read_by_rank, 267, "", Cause.FTS_INDEX, None, id="index_read_by_rank"),
    # The code is all that is sure: a bare SQLITE_CORRUPT fails closed whatever its text names.
    pytest.param(index_named_under_a_bare_code, 11, '"messages_fts"', Cause.CORRUPT, Cause.FTS_INDEX,
                 id="index_under_bare_code"),
    pytest.param(index_schema_entry_garbled, 11, "malformed database schema (messages_fts)", Cause.CORRUPT,
                 Cause.CORRUPT, id="index_schema_entry_garbled"),
]


@pytest.mark.parametrize("make, code, words, cause, uncoded", CASES)
def test_only_corruption_attributed_to_the_search_index_is_index_damage(tmp_path, make, code, words, cause, uncoded):
    exc = make(tmp_path)
    assert exc.extendedresult == code, exc
    assert words in str(exc), exc
    assert classify(exc) is cause, exc
    if uncoded is not None:  # the text alone, as a report that lost the code
        assert classify(Exception(f"a write failed: {exc}")) is uncoded


def test_the_index_objects_are_the_ones_the_store_has(tmp_path):
    db = store(tmp_path)
    conn = apsw.Connection(str(db))
    names = {n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE name LIKE 'messages_fts%' "
                                        "OR name LIKE 'messages_trigram%'")}
    conn.close()
    assert names and names <= FTS_OBJECTS
