"""Is this still our file? The identity check every write group passes first.

A store can be changed underneath a live process in two ways that SQLite cannot see:

- **Replaced** (S-13): someone copies another file over `state.db` (`cp` keeps the inode,
  `mv` brings a new one). A new inode shows in `stat`. A copy onto the same inode does
  not, and SQL cannot see it either (the WAL still serves the old pages), so the check
  reads the store's identity page straight from the main file: the generation stamp
  written once at creation and never changed. It reads through the descriptor SQLite
  already holds (pread on its fd), because opening and closing another descriptor on the
  file would drop the process's POSIX locks (S-12).
- **WAL deleted** (S-14): the `-wal` path is gone, or is a different file from the one the
  writer holds open. SQLite would go on writing into the deleted file while every other
  process starts a fresh WAL: two histories of one database. The old WAL is captured
  from the descriptor still open on it, then writes stop.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ....errors import Cause
from ....files import private_file
from .watch import EVERYTHING, FILE, FileWatch, concerns

# The identity page holds only the generation stamp; migrations must never add rows to it.
IDENTITY_TABLE = "store_identity"
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Finding:
    cause: Cause
    detail: str


def descriptors_of(path: str) -> list[int]:
    """This process's open descriptors whose target is `path` (read from /proc/self/fd)."""
    found = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") in (path, f"{path} (deleted)"):
                found.append(int(name))
        except OSError:
            continue
    return found


class FileGuard:
    """Checks before each write that the database and its WAL are the ones opened."""

    def __init__(self, path: Path, *, db_fd: int | None, generation: str, identity_page: int, page_size: int,
                 wal: bool) -> None:
        self.path = path
        self._db_fd = db_fd
        self._generation = generation.encode()
        self._page_offset = (identity_page - 1) * page_size
        self.page_size = page_size
        self.wal = wal
        self._wal_fd: int | None = None
        self._wal_identity: tuple[int, int] | None = None
        self._wal_name = f"{path.name}-wal"
        # Set up before the files are first looked at, so no event falls between. Only in
        # WAL, which runs on local filesystems only (watch.py); without a descriptor of the
        # database to watch through, the database is looked at every time.
        self._watch = FileWatch(str(path.parent), (self._wal_name,), db_fd) if wal else None
        self._database_seen = False  # the database has been looked at since the watch began
        st = os.stat(path)
        self.identity = (st.st_dev, st.st_ino)

    def relocate(self, identity_page: int) -> bool:
        """Follow the identity page to a new number (VACUUM renumbers pages); True if it moved."""
        offset = (identity_page - 1) * self.page_size
        moved = offset != self._page_offset
        self._page_offset = offset
        self._database_seen = False  # the next check reads the page at its new place
        return moved

    def check(self) -> Finding | None:
        """None if the files are still ours, else what happened to them.

        Everything is read through the descriptors SQLite holds (fstat, pread): a path
        lookup per write would cost more, and a file unlinked or renamed over shows as a
        link count of zero on the descriptor that still points at it. Each file is looked
        at only when the watch saw an event that may concern it (watch.py).
        """
        changes = self._watch.changes() if self._watch is not None else EVERYTHING
        finding = self._check_database(changes)
        if finding is None and self.wal:
            finding = self._check_wal(changes)
        return finding

    def _check_database(self, changes: frozenset[str]) -> Finding | None:
        if (self._database_seen and self._watch is not None and self._watch.watches_file
                and not concerns(changes, FILE)):
            return None  # neither written to nor (un)linked since it was last looked at
        self._database_seen = True
        st = _held(self._db_fd, self.identity)
        if st is None:  # no descriptor of ours to look through: compare the path's inode
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                return Finding(Cause.REPLACED, f"{self.path} was removed or renamed while in use")
            if (st.st_dev, st.st_ino) != self.identity:
                return Finding(Cause.REPLACED, f"{self.path} was replaced by another file while in use")
        elif st.st_nlink == 0:
            return Finding(Cause.REPLACED, f"{self.path} was removed or replaced by another file while in use")
        else:
            return self._check_identity_page()
        return None

    def _check_identity_page(self) -> Finding | None:
        fd = self._db_fd
        head = os.pread(fd, len(SQLITE_MAGIC), 0)
        if head and head != SQLITE_MAGIC:
            return Finding(Cause.REPLACED, f"{self.path} was overwritten with something that is not a database")
        page = os.pread(fd, self.page_size, self._page_offset)
        if len(page) < self.page_size or not page.strip(b"\x00"):
            return None  # not checkpointed into the main file yet: nothing to compare
        if self._generation not in page:
            return Finding(Cause.REPLACED, f"{self.path} was overwritten with another database while in use")
        return None

    def _check_wal(self, changes: frozenset[str]) -> Finding | None:
        wal_path = f"{self.path}-wal"
        if self._wal_fd is None:
            fds = descriptors_of(wal_path)
            if not fds:
                return None  # SQLite has not opened the WAL yet
            self._wal_fd = fds[0]
            self._wal_identity = _identity_of(self._wal_fd)
        elif not concerns(changes, self._wal_name):
            return None  # no name event for the WAL since the last look: still the one we hold
        st = _held(self._wal_fd, self._wal_identity)
        if st is None:
            self._wal_fd = None  # the descriptor was closed: find SQLite's current one next time
            return None
        if st.st_nlink == 0:
            return Finding(Cause.DELETED_WAL, f"{wal_path} was deleted while this process had it open")
        return None

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()

    def capture_retired_wal(self, directory: Path) -> Path | None:
        """Copy the deleted WAL, through the descriptor still open on it, with a manifest."""
        fd = self._wal_fd
        if fd is None or _identity_of(fd) != self._wal_identity:
            return None
        return self._capture(directory, "", Cause.DELETED_WAL, wal_fd=fd, db_fd=None,
                             note="the WAL this process was writing when its file was deleted")

    def capture_unlinked_file(self, directory: Path) -> Path | None:
        """When the file this process writes was moved over or removed (no name left), copy
        it and its WAL through the descriptors still open on them: the only complete copy of
        the old generation once this process closes them (S-49). A file copied over in place
        has no old content left to copy."""
        st = _held(self._db_fd, self.identity)
        if st is None or st.st_nlink != 0:
            return None
        wal = descriptors_of(f"{self.path}-wal")
        return self._capture(directory, "-replaced", Cause.REPLACED, wal_fd=wal[0] if wal else None,
                             db_fd=self._db_fd, note="the file this process was writing when another was moved "
                             "over it (or it was removed), with its WAL")

    def _capture(self, directory: Path, suffix: str, cause: Cause, *, wal_fd: int | None, db_fd: int | None,
                 note: str) -> Path:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = directory / f"retired-wal-{stamp}-{os.getpid()}{suffix}"
        n = 1
        while target.exists() and db_fd is not None:
            n += 1
            target = directory / f"retired-wal-{stamp}-{os.getpid()}{suffix}-{n}"
        target.mkdir(mode=0o700, parents=True, exist_ok=True)
        manifest = {"database": str(self.path), "pid": os.getpid(), "captured_at": time.time(), "cause": cause.value,
                    "generation": self._generation.decode(),  # the file its frames belong to (captures.py)
                    "note": f"{note}; keep it until the store has been checked"}
        if wal_fd is not None:
            manifest["wal_copy"] = f"{self.path.name}-wal"
            manifest["bytes"] = _copy_through(wal_fd, target / manifest["wal_copy"])
        if db_fd is not None:
            manifest["database_copy"] = self.path.name
            manifest["database_bytes"] = _copy_through(db_fd, target / self.path.name)
        with private_file(target / "manifest.json") as out:
            json.dump(manifest, out, indent=2)
        return target


def _copy_through(fd: int, destination: Path) -> int:
    """Copy a file through a descriptor already open on it (pread: no lock is dropped, S-12)."""
    size = 0
    with private_file(destination, "wb") as out:
        while chunk := os.pread(fd, 1 << 20, size):
            out.write(chunk)
            size += len(chunk)
    return size


def _held(fd: int | None, identity: tuple[int, int] | None) -> os.stat_result | None:
    """fstat of `fd` if it still refers to the file with `identity` (descriptors get reused)."""
    if fd is None:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st if (st.st_dev, st.st_ino) == identity else None


def _identity_of(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)

