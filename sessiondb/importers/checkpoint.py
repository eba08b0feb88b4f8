"""The checkpoint of a watched import: how far each file or database was read.

One small JSON file per source and path, in `imports/` beside the store (0700), written
whole to a temporary file (0600), fsynced and renamed over the old one, so a crash leaves
either the old checkpoint or the new one, never half of one. It only ever records what
is already stored (see core.Mark), so resuming from it re-reads nothing that was
imported and skips nothing that was not. The temporary file is files.private_file's, in a
private directory of its own, so a link planted at a predictable name is never written through.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..files import private_file
from ..home import ensure_private_dir, resolve_home
from ..store.contract import Store
from .core import fingerprint, loads

VERSION = 1


def path_for(store: Store, source: str, root: Path) -> Path:
    """Where the checkpoint of importing `root` from `source` into `store` lives."""
    location = Path(store.location)
    directory = location.parent if location.is_file() else resolve_home()
    return directory / "imports" / f"{source}-{fingerprint(str(root.resolve()))[:16]}.json"


def load(path: Path, source: str, root: Path) -> dict[str, Any]:
    """The cursor saved at `path`, or a new one when there is none (or it is not ours)."""
    try:
        saved = loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        saved = None  # none yet, or unreadable: reading again from the start stores nothing twice
    if not isinstance(saved, dict) or (saved.get("version"), saved.get("source"), saved.get("root")) != (
            VERSION, source, str(root.resolve())):
        return {}
    return saved.get("cursor") or {}


def save(path: Path, source: str, root: Path, cursor: dict[str, Any]) -> None:
    ensure_private_dir(path.parent)
    body = json.dumps({"version": VERSION, "source": source, "root": str(root.resolve()), "cursor": cursor})
    with private_file(path) as f:
        f.write(body)
