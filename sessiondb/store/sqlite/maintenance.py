"""Maintenance of a store file: online backup, optimize, vacuum, the release of freed pages.

Rewrites of the file (optimize, vacuum) refuse while another process holds it
(S-19): they list the holders and stop, unless forced. A dry run is never refused. The
online backup copies through SQLite's backup API from a read snapshot, so it is
consistent while writers run, and is published atomically (a staging name, fsync,
rename), never a plain copy of a live file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import apsw

from ...errors import InvalidInput, StoreHeld
from ...files import staged
from ...home import SIDECAR_SUFFIXES
from .index.schema import FILES as INDEX_FILES
from .safety.holders import holders


def store_bytes(db_path: Path) -> int:
    """The store's size on disk: the database, its sidecars and the search index's files."""
    total = 0
    for suffix in ("",) + SIDECAR_SUFFIXES + INDEX_FILES:
        try:
            total += os.stat(f"{db_path}{suffix}").st_size
        except FileNotFoundError:
            pass
    return total


def check_unheld(db_path: Path, action: str, *, force: bool) -> list[str]:
    """Refuse (StoreHeld) while other processes hold the store; with force, warn instead."""
    held_by = holders(db_path)
    if not held_by:
        return []
    names = ", ".join(map(str, held_by))
    if not force:
        raise StoreHeld(
            f"{action} refused: {db_path} is held by {names}; quit those processes and run it "
            "again (or pass --force to run it anyway, at the risk of stalling them)",
            held_by,
        )
    return [f"{action} ran with --force while {names} held the store"]


def backup(source: apsw.Connection, destination: Path) -> int:
    """Copy the store into `destination` (a new file) from one consistent snapshot."""
    if destination.exists():
        raise InvalidInput(f"{destination} already exists; choose a new file for the backup")
    if not destination.parent.is_dir():
        raise InvalidInput(f"{destination.parent} is not a directory")
    with staged(destination, replace=False) as staging:  # private, never through a planted link
        target = apsw.Connection(str(staging))
        try:
            with target.backup("main", source, "main") as copy:
                copy.step(-1)
            target.execute("PRAGMA journal_mode=DELETE")
            # A copy is a new generation: copied back over the live store, it is recognised as
            # a replacement instead of being mistaken for the file the writers hold (S-13).
            target.execute("UPDATE store_identity SET generation = ?", (f"sessiondb-generation:{uuid.uuid4().hex}",))
        finally:
            target.close()
    return os.stat(destination).st_size


def optimize(conn: apsw.Connection, swept_to: int) -> None:
    """Sweep the search log's rows the index has applied (up to `swept_to`), refresh
    planner statistics, checkpoint and truncate the WAL. (The index file is optimized
    by its indexer.)"""
    with conn:
        conn.execute("DELETE FROM search_touched WHERE seq <= ?", (swept_to,))
    conn.execute("ANALYZE")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


#: Free pages one writer transaction hands back (1 MiB of 4 KiB pages): a short write,
#: so an append waits for one step at most.
RELEASE_STEP = 256


def release_step(conn: apsw.Connection) -> int:
    """Hand back up to RELEASE_STEP free pages; the bytes handed back (0: none left, or a
    file without a map of its pages, which keeps them until a VACUUM)."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != 2:
        return 0
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    if not free:
        return 0
    conn.execute(f"PRAGMA incremental_vacuum({RELEASE_STEP})").fetchall()
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    return (free - conn.execute("PRAGMA freelist_count").fetchone()[0]) * page_size


def vacuum(conn: apsw.Connection) -> None:
    # A file made before stores kept a map of their pages gains one in the rewrite, and
    # hands freed pages back beside writers from then on (connect.configure_writer).
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
