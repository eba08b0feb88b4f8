"""The record of the copies `sessiondb backup` made of a store, so that the doctor can name
restoring one as a step when the store is damaged (its forensic sets it finds itself).

The record is `<store>.backups.json` beside the store (0600, written atomically): the
path, time and size of each copy, newest last, at most KEEP. It is a hint, never
trusted blindly: a copy that no longer exists is not named.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from .ledger import save_json

KEEP = 10
log = logging.getLogger(__name__)


def record_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".backups.json")


def remember(db_path: Path, copy: Path, size: int) -> None:
    """Add a copy to the record. Never fails the backup it follows: the copy is made, and
    a record lost to a concurrent writer or a full disk only costs the doctor a hint."""
    entries = [e for e in _load(db_path) if e.get("path") != str(copy)]
    entries.append({"path": str(copy), "taken_at": time.time(), "bytes": size})
    try:
        save_json(record_path(db_path), {"version": 1, "copies": entries[-KEEP:]})
    except OSError as exc:
        log.warning("the record of backup copies of %s was not updated: %s", db_path, exc)


def existing(db_path: Path) -> list[Path]:
    """The recorded copies still on disk, newest first."""
    paths = [Path(e["path"]) for e in reversed(_load(db_path)) if isinstance(e.get("path"), str)]
    return [p for p in paths if p.is_file()]


def _load(db_path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(record_path(db_path).read_text(encoding="utf-8"))
        copies = data["copies"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [e for e in copies if isinstance(e, dict)] if isinstance(copies, list) else []
