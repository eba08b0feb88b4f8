"""Retired-WAL captures (S-14, S-28, S-49): which there are, what each was written for, and
the mark that what one holds was brought back.

A capture is a `retired-wal-<time>-<pid>[-replaced]/` folder beside the store with a
`manifest.json`: the WAL a process was writing when its `-wal` was deleted underneath
(containment.py), or the WAL a replaced file left beside the file that replaced it, set
aside unreplayed at the next open (walowner.py). Its frames are the last commits of the
file they were written for, often the only copy of acknowledged messages.

Reading one (recover.py's recover_capture) never replays it over the live store: a snapshot of the store is taken
through SQLite (the backup API on a read-only connection, never plain I/O on the live
file, S-12) into a private scratch directory, the captured WAL is put beside the
snapshot, and the pair is salvaged into a new store (recover.py), whose rows a caller
reads with SQL through the store API. The snapshot is the file the WAL was written for
when the capture's generation is the store's (a deleted WAL); after a replacement the
file it was written for is gone and the WAL's pages are laid over the file that replaced
it: whatever the old file held outside its WAL is not there, and salvage reads what
survives the mix. Bringing the rows back into a store is the neutral layer's
(store/captured.py).

Once brought back, the manifest records where and when (`restored`); the doctor then
stops naming the capture as a problem (examine.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ....errors import InvalidInput
from . import ledger

MANIFEST = "manifest.json"
PREFIX = "retired-wal-"


def folders(db_path: Path) -> list[Path]:
    """The capture folders beside the store at `db_path`, oldest first."""
    return sorted(p for p in db_path.parent.glob(f"{PREFIX}*") if p.is_dir())


def manifest_of(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe(db_path: Path, folder: Path) -> dict[str, Any] | None:
    """What a capture is: its folder, cause, the generation its WAL was written for (None
    when the manifest, from an earlier release, does not say), its size and whether it
    was restored. None for a folder that is not a readable capture of this store."""
    manifest = manifest_of(folder)
    # Beside the store, of a file of its name (the path it was opened by may differ: links).
    if manifest is None or Path(str(manifest.get("database") or db_path)).name != db_path.name:
        return None
    wal = folder / str(manifest.get("wal_copy") or f"{db_path.name}-wal")
    return {
        "capture": str(folder),
        "cause": manifest.get("cause"),
        "generation": manifest.get("wal_generation") or manifest.get("generation"),
        "bytes": wal.stat().st_size if wal.is_file() else 0,
        "restored": manifest.get("restored"),
    }


def captures(db_path: Path) -> list[dict[str, Any]]:
    return [c for c in (describe(db_path, f) for f in folders(db_path)) if c is not None]


def database_of(db_path: Path, capture: str) -> Path | None:
    """The copy of the file the capture's WAL was written for, when the capture has one
    (a file moved over, copied from the descriptor still open on the old one)."""
    folder = folder_of(db_path, capture)
    name = (manifest_of(folder) or {}).get("database_copy")
    return folder / str(name) if name and (folder / str(name)).is_file() else None


def wal_of(db_path: Path, capture: str) -> Path | None:
    """The captured WAL in the capture folder `capture` (None when it kept a file alone;
    InvalidInput when it holds neither)."""
    folder = folder_of(db_path, capture)
    wal = folder / str((manifest_of(folder) or {}).get("wal_copy") or f"{db_path.name}-wal")
    if wal.is_file():
        return wal
    if database_of(db_path, capture) is None:
        raise InvalidInput(f"{folder} holds no captured WAL ({wal.name} is missing)")
    return None


def mark_restored(db_path: Path, capture: str, record: dict[str, Any]) -> None:
    """Record in the capture's manifest that what it holds was brought back (and where)."""
    folder = folder_of(db_path, capture)
    manifest = manifest_of(folder) or {}
    ledger.save_json(folder / MANIFEST, {**manifest, "restored": {"at": time.time(), **record}})


def folder_of(db_path: Path, capture: str) -> Path:
    folder = Path(os.path.realpath(capture))
    if folder.parent != db_path.parent or not folder.name.startswith(PREFIX) or not folder.is_dir():
        raise InvalidInput(f"{capture} is not a retired-WAL capture beside {db_path}")
    return folder
