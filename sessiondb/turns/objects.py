"""The checkpoint files under the sessiondb home: content-addressed blobs and JSON records.

`<root>/objects/ab/abcdef...` holds each distinct file content once, named by its SHA-256,
so a thousand checkpoints of a mostly unchanged tree store each version of a file once.
`<root>/sessions/<hash of the session id>/` holds a session's checkpoint manifests and its
post-write ledger. Directories are 0700 and files 0600, like the store itself; every file
is written to a temporary name, synced and renamed, so a crash never leaves half of one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ..files import private_file
from ..home import ensure_private_dir


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Objects:
    """The blob store and record files of one root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, data: bytes) -> str:
        sha = digest(data)
        path = self._blob(sha)
        if not path.exists():  # the same content is stored once, whoever wrote it first
            write_private(path, data)
        return sha

    def get(self, sha: str) -> bytes:
        data = self._blob(sha).read_bytes()
        if digest(data) != sha:
            raise OSError(f"checkpoint object {sha} is damaged (its content no longer matches its name)")
        return data

    def session_dir(self, session_id: str) -> Path:
        # A session id is free text: hashed, it can never name a path outside the root.
        return self.root / "sessions" / digest(session_id.encode("utf-8"))[:32]

    def _blob(self, sha: str) -> Path:
        return self.root / "objects" / sha[:2] / sha


def write_private(path: Path, data: bytes, *, exclusive: bool = False) -> None:
    """Write `path` atomically with mode 0600 (files.private_file: staged in a private
    directory, never through a planted link); with `exclusive`, FileExistsError if it exists."""
    ensure_private_dir(path.parent)
    with private_file(path, "wb", replace=not exclusive) as out:
        out.write(data)


def write_json(path: Path, value: Any, *, exclusive: bool = False) -> None:
    write_private(path, json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8"), exclusive=exclusive)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
