"""Damage stops writes before it spreads (S-13, S-14, S-15).

Each open database file has one Containment, consulted by its writer before every
transaction and told of every failure. The first sign of damage (a replaced file, a
deleted WAL, structural corruption on a write) is sticky for that file in this process:
every later write fails fast with the same cause, no handle in the process opens the
path again, and closing skips the checkpoint, so a damaged file is never made worse by
the process that noticed it. Two exceptions to "no handle opens the path again": a
replaced file's old handles stay refused, and the file now at the path, another
generation, is opened afresh by new handles, whether the old ones are still open or were
closed (store.py retires the old one first); and
a file this process healed in place (repair.py, which runs only while the process has no
handle on it) is opened again, so the spool of its refused writes can be replayed.

The check itself (S-13, S-14) comes first below, then the inotify watch that lets it skip
its system calls, then what a finding does to the file's writes.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import struct
import termios
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from ....errors import Cause, StoreDamaged, classify
from ....files import descriptors_of, private_file
from . import walowner



# --- is this still our file? ---------------------------------------------------------------
#
# Is this still our file? The identity check every write group passes first.
#
# A store can be changed underneath a live process in two ways that SQLite cannot see:
#
# - **Replaced** (S-13): someone copies another file over `state.db` (`cp` keeps the inode,
#   `mv` brings a new one). A new inode shows in `stat`. A copy onto the same inode does
#   not, and SQL cannot see it either (the WAL still serves the old pages), so the check
#   reads the store's identity page straight from the main file: the generation stamp
#   written once at creation and never changed. It reads through the descriptor SQLite
#   already holds (pread on its fd), because opening and closing another descriptor on the
#   file would drop the process's POSIX locks (S-12).
# - **WAL deleted** (S-14): the `-wal` path is gone, or is a different file from the one the
#   writer holds open. SQLite would go on writing into the deleted file while every other
#   process starts a fresh WAL: two histories of one database. The old WAL is captured
#   from the descriptor still open on it, then writes stop.

# The identity page holds only the generation stamp; migrations must never add rows to it.
IDENTITY_TABLE = "store_identity"
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass(frozen=True)
class Finding:
    cause: Cause
    detail: str




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
        # WAL, which runs on local filesystems only (the watch below); without a descriptor of the
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
        at only when the watch saw an event that may concern it (the watch below).
        """
        changes = self._watch.changes() if self._watch is not None else EVERYTHING
        if (changes is NOTHING and self._database_seen and self._watch.watches_file
                and (self._wal_fd is not None or not self.wal)):
            return None  # no event for either file since each was last looked at
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


# --- file events, so the check can skip its system calls -----------------------------------
#
# File events in the store's directory, so the identity check can skip its system calls.
#
# The identity check (above) runs before every write group. It asks whether the
# database SQLite writes through is still the one at the path, with the same content
# stamp (S-13), and whether the `-wal` file is still the one at its path (S-14). Asked
# directly, that is an fstat and two preads of the database and an fstat of the WAL per
# group: each releases the GIL, so with several writer threads each is a hand-off the
# committing thread waits behind, and an fstat right after the commit's fsync costs as much
# as a third of a commit on ext4.
#
# Every way those answers can change is an event the kernel reports through inotify,
# whichever path or process made it:
# - the WAL's name in the directory created, deleted or renamed (IN_CREATE, IN_DELETE,
#   IN_MOVED_FROM, IN_MOVED_TO): `mv` over the WAL, `rm` of it;
# - the database file itself, watched by inode through the descriptor SQLite holds, whatever
#   name or directory the change goes through: written to or truncated (IN_MODIFY: `cp` or
#   `dd` onto the same inode, a checkpoint) or linked and unlinked (IN_ATTRIB, which a link
#   count change raises: `mv` over the store, `rm` of it).
#
# So each question is asked again only when an event concerns it, or when the watch cannot
# vouch for the interval: its queue overflowed, the directory was moved or removed, or
# inotify is not available (then every ask says "changed"). One read of the inotify
# descriptor per group replaces the rest. Local filesystems only: a network filesystem
# does not report what other hosts do, and the store does not run in WAL there (connect.py),
# where the identity check asks directly every time.

IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, 0o2000000
IN_MODIFY, IN_ATTRIB = 0x2, 0x4
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_NAMES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_SELF = IN_DELETE_SELF | IN_MOVE_SELF
_CONTENT = IN_MODIFY | IN_ATTRIB
_LOST = _SELF | IN_Q_OVERFLOW | IN_IGNORED
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)

#: What changes() returns when the watch cannot tell: every name, and the file.
EVERYTHING = frozenset({"*"})
#: What changes() returns when nothing happened.
NOTHING: frozenset[str] = frozenset()
#: The key under which changes() reports an event of the watched file itself.
FILE = "file"
_PENDING = struct.Struct("i")  # FIONREAD's answer: the bytes of events waiting
_NO_BYTES = bytes(_PENDING.size)


class FileWatch:
    """Has one of some names in a directory been created, deleted or renamed, or one open
    file been written to or (un)linked, since the last ask?"""

    def __init__(self, directory: str, names: tuple[str, ...], file_fd: int | None = None) -> None:
        """`file_fd`: a descriptor of the file to watch by inode (the one SQLite holds)."""
        self._names = {os.fsencode(n): n for n in names}
        self._fd: int | None = None
        self._file_wd: int | None = None
        self._lost = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                return
            if libc.inotify_add_watch(fd, os.fsencode(directory), _NAMES | _SELF) < 0:
                os.close(fd)
                return
            if file_fd is not None:
                # Through /proc: the inode SQLite has open, even if the path moved meanwhile.
                wd = libc.inotify_add_watch(fd, os.fsencode(f"/proc/self/fd/{file_fd}"), _CONTENT | _SELF)
                if wd < 0:
                    os.close(fd)
                    return
                self._file_wd = wd
            self._fd = fd
        except (OSError, AttributeError):  # no inotify here: every ask says "everything"
            self._fd = None

    @property
    def watches_file(self) -> bool:
        return self._fd is not None and self._file_wd is not None

    def changes(self) -> frozenset[str]:
        """The names (and FILE) with an event since the last call; EVERYTHING whenever the
        watch cannot tell."""
        if self._fd is None or self._lost:
            return EVERYTHING
        try:
            if not _PENDING.unpack(fcntl.ioctl(self._fd, termios.FIONREAD, _NO_BYTES))[0]:
                return NOTHING  # asked without a read that fails (an exception per write group)
        except OSError:
            self._lost = True
            return EVERYTHING
        seen: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return frozenset(seen)
            except OSError:
                self._lost = True
                return EVERYTHING
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size:offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                if mask & _LOST:
                    self._lost = True  # from now on the watch cannot vouch for anything
                    return EVERYTHING
                if wd == self._file_wd:
                    seen.add(FILE)
                elif name in self._names:
                    seen.add(self._names[name])

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def concerns(changes: frozenset[str], *keys: str) -> bool:
    """Whether `changes` (from FileWatch.changes) may concern any of `keys`."""
    return changes is EVERYTHING or any(k in changes for k in keys)


# --- damage stops writes -------------------------------------------------------------------

# Paths found damaged in this process, with what was found. Cleared only for a file now
# at the path (a replaced one) or one this process healed in place with no handle open on
# it; otherwise the remedy is to quit the process, which the guidance says.
_damaged: dict[Path, Finding] = {}
_lock = threading.Lock()


def refuse_if_damaged(path: Path) -> None:
    with _lock:
        finding = _damaged.get(path)
    if finding is not None:
        raise damaged_error(path, finding)


def forget_replaced(path: Path) -> None:
    """A file found replaced stops being refused at its path once the handles on it are
    retired or closed: the path now holds another generation, which new handles open and
    check on their own (S-13, S-28). Other findings stay sticky."""
    with _lock:
        if path in _damaged and _damaged[path].cause is Cause.REPLACED:
            del _damaged[path]


def forget_healed(path: Path) -> None:
    """A file this process repaired in place, and examined healthy, while no handle in the
    process had it open, may be opened again: no handle is left that noticed the damage
    and could make it worse, and the spool its refused writes went to is replayed into it."""
    with _lock:
        _damaged.pop(path, None)


def damaged_error(path: Path, finding: Finding) -> StoreDamaged:
    return StoreDamaged(
        f"{finding.detail}; sessiondb stopped writing to {path} in this process ({finding.cause.value}).",
        finding.cause,
    )


class Containment:
    """The damage watch of one open database file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.finding: Finding | None = None
        self._guard: FileGuard | None = None
        self.generation: str | None = None  # the stamp of the file opened, once attached
        self._db_fds_before = set(descriptors_of(str(path)))
        self._conn: apsw.Connection | None = None

    def attach(self, conn: apsw.Connection, journal_mode: str) -> None:
        """Start watching, once the writer's connection is open and the schema is current."""
        self._conn = conn
        new_fds = sorted(set(descriptors_of(str(self.path))) - self._db_fds_before)
        generation, page, page_size = conn.execute(
            "SELECT (SELECT generation FROM store_identity), "
            "(SELECT rootpage FROM sqlite_schema WHERE name = 'store_identity'), "
            "(SELECT page_size FROM pragma_page_size)"
        ).fetchone()
        self._guard = FileGuard(
            self.path, db_fd=new_fds[0] if new_fds else None, generation=generation,
            identity_page=page, page_size=page_size, wal=journal_mode == "wal",
        )
        self.generation = generation
        if journal_mode == "wal":
            walowner.record(self.path, generation, page, page_size)

    def before_group(self, conn: apsw.Connection) -> None:
        """Raise StoreDamaged if the file is (or has just been found) damaged."""
        if self.finding is None and self._guard is not None:
            finding = self._guard.check()
            if finding is not None and finding.cause is Cause.REPLACED and self._moved_identity_page(conn):
                finding = self._guard.check()  # VACUUM moved the identity page: look again
            if finding is not None:
                self._mark(finding)
        if self.finding is not None:
            raise damaged_error(self.path, self.finding)

    def close(self) -> None:
        if self._guard is not None:
            self._guard.close()

    def on_error(self, exc: BaseException) -> None:
        """Structural corruption seen on a write marks the file (index damage does not)."""
        if self.finding is None and classify(exc) is Cause.CORRUPT:
            self._mark(Finding(Cause.CORRUPT, f"{self.path} reported structural corruption on a write ({exc})"))

    def _moved_identity_page(self, conn: apsw.Connection) -> bool:
        page = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = 'store_identity'").fetchone()
        moved = page is not None and self._guard.relocate(page[0])
        if moved and self._guard.wal:
            walowner.record(self.path, self.generation, page[0], self._guard.page_size)
        return moved

    def _mark(self, finding: Finding) -> None:
        self.finding = finding
        with _lock:
            _damaged.setdefault(self.path, finding)
        if finding.cause is Cause.DELETED_WAL and self._guard is not None:
            self._guard.capture_retired_wal(self.path.parent)
        elif finding.cause is Cause.REPLACED and self._guard is not None:
            self._guard.capture_unlinked_file(self.path.parent)
        if self._conn is not None:
            no_checkpoint_on_close(self._conn)


def no_checkpoint_on_close(conn: apsw.Connection) -> None:
    """Closing must not copy WAL content into a damaged (or foreign) main file."""
    conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
