"""Retired-WAL captures (S-14, S-28, S-49): what they hold, read without touching the live
file, and marked once what they hold was brought back.

A capture is a `retired-wal-<time>-<pid>[-replaced]/` folder beside the store with a
`manifest.json`: the WAL a process was writing when its `-wal` was deleted underneath
(identity.py), or the WAL a replaced file left beside the file that replaced it, set
aside unreplayed at the next open (walowner.py). Its frames are the last commits of the
file they were written for, often the only copy of acknowledged messages.

Reading one never replays it over the live store: a snapshot of the store is taken
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
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw

from ....errors import InvalidInput
from ....files import private_file
from . import ledger, recover
from . import examine as examination
from .holders import holders
from .identity import descriptors_of

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
    if manifest is None or manifest.get("database") not in (None, str(db_path)):
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


def read(db_path: Path, capture: str, output: Path) -> recover.RecoverReport:
    """Salvage what the capture's WAL says, laid over a snapshot of the store at `db_path`,
    into the new store `output`. Neither the store nor the capture is changed."""
    folder = _folder(db_path, capture)
    manifest = manifest_of(folder) or {}
    wal = folder / str(manifest.get("wal_copy") or f"{db_path.name}-wal")
    if not wal.is_file():
        raise InvalidInput(f"{folder} holds no captured WAL ({wal.name} is missing)")
    scratch = Path(tempfile.mkdtemp(prefix="sessiondb-capture-", dir=output.parent))
    try:
        base = scratch / db_path.name
        _snapshot(db_path, base)
        with private_file(Path(f"{base}-wal"), "wb") as out, open(wal, "rb") as captured:
            shutil.copyfileobj(captured, out)
        return recover.recover(base, output)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def mark_restored(db_path: Path, capture: str, record: dict[str, Any]) -> None:
    """Record in the capture's manifest that what it holds was brought back (and where)."""
    folder = _folder(db_path, capture)
    manifest = manifest_of(folder) or {}
    ledger.save_json(folder / MANIFEST, {**manifest, "restored": {"at": time.time(), **record}})


def _folder(db_path: Path, capture: str) -> Path:
    folder = Path(os.path.realpath(capture))
    if folder.parent != db_path.parent or not folder.name.startswith(PREFIX) or not folder.is_dir():
        raise InvalidInput(f"{capture} is not a retired-WAL capture beside {db_path}")
    return folder


def _snapshot(db_path: Path, base: Path) -> None:
    """A consistent copy of the store at `db_path` in WAL mode (so a WAL put beside it is
    read), made through SQLite: page for page, so the captured frames land where they were
    written."""
    if not db_path.is_file():
        raise InvalidInput(f"{db_path} does not exist: there is no file to lay the captured WAL over")
    # Immutable only while nothing, here or elsewhere, has the file or a log beside it open
    # (examine.py says why); else an ordinary read-only connection, which shares locks.
    quiet = not holders(db_path) and not descriptors_of(str(db_path)) and not any(
        os.path.exists(f"{db_path}{s}") for s in ("-wal", "-journal"))
    source = examination.open_readonly(db_path, quiet=quiet)
    try:
        copy = apsw.Connection(str(base))
        try:
            copy.execute("PRAGMA journal_mode=WAL")
            with copy.backup("main", source, "main") as step:
                step.step(-1)
            copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            copy.close()
    finally:
        source.close()
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(f"{base}{suffix}")
        except FileNotFoundError:
            pass
