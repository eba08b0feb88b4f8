"""The turns' checkpoint files beside a store: content-addressed blobs and JSON records (a
leaf: the turns take and read checkpoints with it, a forget removes a session's).

`<root>/objects/ab/abcdef...` holds each distinct file content once, named by its SHA-256,
so a thousand checkpoints of a mostly unchanged tree store each version of a file once.
`<root>/sessions/<hash of the session id>/` holds a session's checkpoint manifests and its
post-write ledger. Directories are 0700 and files 0600, like the store itself; every file
is written to a temporary name, synced and renamed, so a crash never leaves half of one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from .files import private_file
from .home import ensure_private_dir

ROOT_NAME = "checkpoints"  # beside the store file, in the profile's directory of the home


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

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the root's lock, across processes: a checkpoint being taken (its contents put,
        then its manifest written) and a removal of contents no manifest names never overlap,
        or a content put just before the removal would be named by a manifest just after it."""
        ensure_private_dir(self.root)
        fd = os.open(self.root / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def forget(self, session_ids: set[str]) -> int:
        """Remove the sessions' manifests and ledgers, and every content that no other
        session's checkpoint names; how many files went. Called with the lock held."""
        named: set[str] = set()
        removed = 0
        for session_id in session_ids:
            directory = self.session_dir(session_id)
            for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
                named.update(_contents(path))
                path.unlink()
                removed += 1
            with contextlib.suppress(FileNotFoundError, OSError):
                directory.rmdir()
        kept = {sha for path in (self.root / "sessions").glob("*/*.json") for sha in _contents(path)}
        for sha in named - kept:
            with contextlib.suppress(FileNotFoundError):
                self._blob(sha).unlink()
                removed += 1
        return removed

    def session_dir(self, session_id: str) -> Path:
        # A session id is free text: hashed, it can never name a path outside the root.
        return self.root / "sessions" / digest(session_id.encode("utf-8"))[:32]

    def _blob(self, sha: str) -> Path:
        return self.root / "objects" / sha[:2] / sha


def forget_sessions(location: str, session_ids: set[str]) -> int:
    """Remove the checkpoints of these sessions of the store at `location` (kept under the
    default root beside it) and the contents no other session's checkpoint holds; how many
    files went (a forget's, store/forgetting.py)."""
    objects = Objects(Path(location).parent / ROOT_NAME)
    if not objects.root.is_dir():
        return 0
    with objects.exclusive():
        return objects.forget(session_ids)


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


def _contents(path: Path) -> set[str]:
    """The contents a checkpoint manifest names (none for a ledger, or a file unreadable)."""
    try:
        files = read_json(path).get("files")
    except (OSError, ValueError, AttributeError):
        return set()
    return {f["sha256"] for f in files.values()} if isinstance(files, dict) else set()
