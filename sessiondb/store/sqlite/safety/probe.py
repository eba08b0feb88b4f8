"""The startup probe: after an unclean shutdown, a short integrity check before the first
write, so a file damaged by the crash is refused instead of written to.

store.py runs it when it opens a file's writer; it shares the doctor's integrity
check and classification (integrity.py) and nothing else of the doctor.
"""

from __future__ import annotations

import os
from pathlib import Path

import apsw

from ....errors import Cause, StoreDamaged
from .containment import no_checkpoint_on_close
from .holders import holders
from .integrity import STRUCTURAL, classify_lines, integrity_lines

STARTUP_BUDGET = 0.5  # seconds of quick_check after an unclean shutdown (~60 MB; 100 MB takes 0.87 s)


def unclean_shutdown(db_path: Path) -> bool:
    """A WAL (or rollback journal) with content at the first open of this process, and no
    other process holding the store: the last writer did not close cleanly (a clean close
    removes the WAL; a finished transaction empties or removes the journal)."""
    left_behind = False
    for suffix in ("-wal", "-journal"):
        try:
            left_behind = left_behind or os.stat(f"{db_path}{suffix}").st_size > 0
        except FileNotFoundError:
            continue
    return left_behind and not holders(db_path)


def startup_probe(conn: apsw.Connection, db_path: Path, *, budget: float = STARTUP_BUDGET) -> None:
    """A size-bounded quick check after an unclean shutdown; raises StoreDamaged (cause
    corrupt) on structural damage, before any write. Index and schema damage are left to
    the doctor (writes stay safe: index damage is contained by S-16). A check the disk
    stopped raises its own error (the open is refused as disk_full), never damage (S-48)."""
    lines, _complete = integrity_lines(conn, deep=False, budget=budget)
    if not lines:
        return
    try:
        roots = {r[3]: r for r in conn.execute("SELECT type, name, tbl_name, rootpage FROM sqlite_schema") if r[3]}
    except apsw.Error:
        roots = {}
    classes = classify_lines(lines, roots, schema_broken=False)
    if any(cls == STRUCTURAL for cls, _ in classes):
        detail = next(f for cls, f in classes if cls == STRUCTURAL)
        # The caller closes this connection: it must not checkpoint the WAL into a damaged file.
        no_checkpoint_on_close(conn)
        raise StoreDamaged(
            f"{db_path} was not closed cleanly and its integrity probe found structural damage ({detail}); "
            "sessiondb did not write to it. Quit every process using it and run `sessiondb doctor`.",
            Cause.CORRUPT,
        )
