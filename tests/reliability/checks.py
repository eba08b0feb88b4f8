"""What every reliability test asserts of a store once the dust settles: it is intact."""

from __future__ import annotations

from pathlib import Path

import apsw

from sessiondb.store.sqlite.index.coverage import differences


def assert_intact(path: Path, *, writable: bool = True) -> None:
    """`integrity_check` says ok and, on a writable open, the search index (its own file),
    caught up, holds exactly what one rebuilt from nothing would."""
    flags = apsw.SQLITE_OPEN_READWRITE if writable else apsw.SQLITE_OPEN_READONLY
    conn = apsw.Connection(str(path), flags=flags)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()
    if writable:
        assert differences(path) == []
