"""Making commits durable outside the write lock: the WAL synced after COMMIT, not in it.

At durability "full", SQLite's own way (synchronous=FULL) syncs the WAL inside COMMIT,
while the transaction still holds the database's write lock: nobody, in this process or
another, can write the next transaction during the sync, so every commit waits for the
disk twice over, once for its own sync and once for the one before it. Instead the
writer's connection commits at synchronous=NORMAL (the frames are written, not synced),
lets go of the lock, and only then syncs the WAL (WalSync) before it acknowledges; the
next transaction is written during that sync, and one sync covers every commit written
before it began (writer.py).

Why this keeps the promise of "full" (an acknowledged write survives power loss):
- A sync of the WAL makes every frame written to it before the sync durable, and WAL
  recovery replays a log up to its first invalid frame: once a commit's sync returns,
  that commit and all before it survive.
- At NORMAL, SQLite still syncs the WAL before each checkpoint copies it into the main
  file, the main file after it, and the WAL's header when the log starts over, exactly
  as at FULL: only the sync at COMMIT moves here.
- What changes is who can see an unsynced commit: readers (and the search index) may read
  a commit a power cut then takes away, as at durability "normal". It was never
  acknowledged, and the index is built to follow a store that lost commits (indexer.py).

The sync goes to the WAL file SQLite writes: a descriptor duplicated from one SQLite
opened on it (the WAL holds no POSIX lock, so ours closing drops nothing), or, for a
store opened through a VFS of its own (the test shims), a handle opened through that VFS,
so that the VFS sees and can fail this sync like any other. Where neither is possible
(no /proc/self/fd), the store keeps synchronous=FULL.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import apsw

from ...errors import DiskFull, StorageError
from .safety.identity import descriptors_of

_fdatasync = getattr(os, "fdatasync", os.fsync)  # macOS has only fsync (what SQLite calls there too)


class WalSync:
    """The sync of one store's WAL file (see the module docstring)."""

    def __init__(self, fd: int | None, handle: apsw.VFSFile | None) -> None:
        self._fd = fd
        self._handle = handle

    @classmethod
    def of(cls, path: Path, vfs: str | None) -> "WalSync | None":
        """The sync of the WAL of `path`, once SQLite has opened it; None if it cannot be had."""
        wal = f"{path}-wal"
        if vfs:
            try:
                return cls(None, apsw.VFSFile(vfs, wal, [apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_WAL, 0]))
            except apsw.Error:
                return None
        try:
            current = os.stat(wal)
        except OSError:
            return None
        for fd in descriptors_of(wal):
            try:
                ours = os.dup(fd)
            except OSError:
                continue  # closed since it was listed
            st = os.fstat(ours)  # checked on our copy: the listed number may since name another file
            if (st.st_dev, st.st_ino) == (current.st_dev, current.st_ino):
                return cls(ours, None)
            os.close(ours)
        return None

    def __call__(self) -> None:
        """Sync the WAL (the GIL is released during it on the descriptor route)."""
        if self._fd is not None:
            try:
                _fdatasync(self._fd)
            except OSError as exc:
                kind = DiskFull if exc.errno in (errno.ENOSPC, errno.EDQUOT) else StorageError
                raise kind(f"the disk failed to make a write durable (syncing the WAL: {exc}); it may or may "
                           "not be stored: check the disk, then retry (a retried append is stored once)") from exc
        else:
            self._handle.xSync(apsw.SQLITE_SYNC_NORMAL)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        elif self._handle is not None:
            self._handle.xClose()
            self._handle = None
