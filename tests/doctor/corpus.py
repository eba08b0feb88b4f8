"""Damaged stores made on the spot: each function damages a healthy store the way disks and
people do, through SQLite itself where the damage is logical (a garbled schema row, garbled
index blocks) and by writing bytes into pages found with dbstat where it is physical."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw

import sessiondb
from sessiondb.store.sqlite.index.indexer import Indexer
from sessiondb.store.sqlite.migrations import MIGRATIONS
from sessiondb.store.sqlite.safety.schema import reference_schema
from sessiondb.store.sqlite.index.schema import SUFFIX

SESSIONS = 8
MESSAGES = 40  # per session


def healthy(directory: Path) -> Path:
    """A closed, checkpointed store with SESSIONS sessions of MESSAGES messages each."""
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "state.db"
    with sessiondb.open_store(db) as store:
        for i in range(SESSIONS):
            session = store.create_session("cli", title=f"session {i}")
            store.append(session.id, [{"role": "user", "content": f"message {i}.{j} about kyoto " + "x" * 300}
                                      for j in range(MESSAGES)])
        store.search("kyoto")  # the search index (its own file) caught up
    assert not Path(f"{db}-wal").exists() and _index(db).exists()
    return db


def _index(db: Path) -> Path:
    """The store's search index file, built first if a repair deleted it (by the indexer
    alone: opening the store would replay its spool)."""
    path = Path(f"{db}{SUFFIX}")
    if db.exists() and not path.exists():
        indexer = Indexer(db, patience=5.0, vfs=None)
        indexer.catch_up()
        indexer.stop()
    return path


def copy_of(template: Path, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    db = directory / "state.db"
    shutil.copyfile(template, db)
    shutil.copyfile(_index(template), _index(db))
    return db


def _pages(db: Path, name: str, kind: str = "leaf") -> list[int]:
    conn = apsw.Connection(str(db))
    try:
        return [r[0] for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno", (name, kind))]
    finally:
        conn.close()


def _garble_page(db: Path, pageno: int, page_size: int = 4096) -> None:
    with open(db, "r+b") as f:
        f.seek((pageno - 1) * page_size + 8)
        f.write(bytes((i * 131 + 7) % 256 for i in range(page_size - 8)))


def garble_index_blocks(db: Path) -> Path:
    """The full-text index's own data blocks garbled (damage FTS5 attributes to itself)."""
    conn = apsw.Connection(str(_index(db)))
    conn.execute("UPDATE words_data SET block = zeroblob(length(block)) WHERE id > 10")
    conn.close()
    return db


def garble_index_pages(db: Path) -> Path:
    """A b-tree page of the word index's shadow table, in the index's own file, overwritten."""
    _garble_page(_index(db), _pages(_index(db), "words_data")[-1])  # how many there are depends on the batches indexed
    return db


def garble_schema_row(db: Path) -> Path:
    """The schema entry of an index rewritten into SQL that does not parse."""
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute("UPDATE sqlite_schema SET sql = 'CREATE INDEX messages_session ON messages(session_id, id' "
                 "WHERE name = 'messages_session'")
    conn.close()
    return db


def garble_btree_index(db: Path) -> Path:
    """A leaf page of an ordinary index (messages_uid) overwritten."""
    _garble_page(db, _pages(db, "messages_uid")[1])
    return db


def garble_table_pages(db: Path) -> Path:
    """Two leaf pages of the messages table overwritten."""
    leaves = _pages(db, "messages")
    _garble_page(db, leaves[3])
    _garble_page(db, leaves[len(leaves) // 2])
    return db


def zero_header(db: Path) -> Path:
    with open(db, "r+b") as f:
        f.write(b"\x00" * 100)
    return db


def truncate(db: Path) -> Path:
    os.truncate(db, (os.path.getsize(db) // 4096 // 2) * 4096)
    return db


def _edit_schema(db: Path, sql: str) -> Path:
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA writable_schema=ON")
    conn.execute(sql)
    conn.close()
    return db


def duplicate_index_entry(db: Path) -> Path:
    """An index named by two identical schema entries (a hand edit, a buggy tool)."""
    return _edit_schema(db, "INSERT INTO sqlite_schema SELECT * FROM sqlite_schema WHERE name = 'messages_session'")


def duplicate_table_entry(db: Path) -> Path:
    return _edit_schema(db, "INSERT INTO sqlite_schema SELECT * FROM sqlite_schema WHERE name = 'usage'")


def missing_index_entry(db: Path) -> Path:
    """The unique index that makes appends idempotent, gone from the schema."""
    return _edit_schema(db, "DELETE FROM sqlite_schema WHERE name = 'messages_uid'")


def missing_trigger_entry(db: Path) -> Path:
    return _edit_schema(db, "DELETE FROM sqlite_schema WHERE name = 'messages_search_gone'")


def missing_table_entry(db: Path) -> Path:
    return _edit_schema(db, "DELETE FROM sqlite_schema WHERE name = 'usage'")


def half_migrated(db: Path) -> Path:
    """The objects of the last migration that builds any all there, its record gone. (One
    that only rewrites rows, as 0008_escaped_text does, leaves nothing to find without its
    record: the file is simply one migration behind, and the next open applies it.)"""
    names = [name for name, _ in MIGRATIONS]
    building = next(name for i, name in reversed(list(enumerate(names)))
                    if set(reference_schema(frozenset(names[:i + 1]))) != set(reference_schema(frozenset(names[:i]))))
    conn = apsw.Connection(str(db))
    conn.execute("DELETE FROM schema_migrations WHERE name = ?", (building,))
    conn.close()
    return db


WRITE_AND_DIE = (
    "import os, sys, sessiondb\n"
    "s = sessiondb.open_store(sys.argv[1])\n"
    "x = s.create_session('cli', title='only in the old WAL')\n"
    "s.append(x.id, {'role': 'user', 'content': 'written just before the crash'})\n"
    "os._exit(0)\n"
)


def foreign_wal(db: Path) -> Path:
    """A WAL left by a writer that died, beside a main file another store was copied over."""
    earlier = db.with_name("earlier.db")
    with sessiondb.open_store(db) as store:
        store.backup(earlier)  # another generation of the same sessions
    subprocess.run([sys.executable, "-c", WRITE_AND_DIE, str(db)], check=True)
    shutil.copyfile(earlier, db)
    return db


#: Every kind of damage: (the function that makes it, or None for a healthy store, the
#: doctor's class, whether open refuses it). Open refuses what the header and schema show;
#: damage only the integrity check sees is the doctor's, contained on the write path (an
#: index's by S-16, a page's once a write meets it, S-15).
KINDS = [
    (None, "none", False),
    ("garble_index_blocks", "index", False),
    ("garble_index_pages", "index", False),
    ("garble_schema_row", "schema", True),
    ("garble_btree_index", "schema", False),
    ("duplicate_index_entry", "schema", True),
    ("duplicate_table_entry", "schema", True),
    ("missing_index_entry", "schema", True),
    ("missing_trigger_entry", "schema", True),
    ("half_migrated", "schema", True),
    ("garble_table_pages", "structural", False),
    ("zero_header", "structural", True),
    ("truncate", "structural", True),
    ("foreign_wal", "none", False),  # not damage: the next open sets it aside unreplayed; restore-captured reads it
    ("missing_table_entry", "structural", True),
]


def digest(db: Path) -> str:
    return hashlib.sha256(db.read_bytes()).hexdigest() if db.exists() else "absent"
