"""What every reliability test asserts of a store once the dust settles: it is intact."""

from __future__ import annotations

from pathlib import Path

import apsw

from sessiondb.store.sqlite import search


def assert_intact(path: Path, *, writable: bool = True) -> None:
    """`integrity_check` says ok and, on a writable open, both search indexes agree with
    the messages (FTS5's integrity-check is a command, so it needs a writable connection)."""
    flags = apsw.SQLITE_OPEN_READWRITE if writable else apsw.SQLITE_OPEN_READONLY
    conn = apsw.Connection(str(path), flags=flags)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        if writable:
            search.check_integrity(conn)
    finally:
        conn.close()
