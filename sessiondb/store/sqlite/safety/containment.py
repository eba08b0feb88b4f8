"""Damage stops writes before it spreads (S-13, S-14, S-15).

Each open database file has one Containment, consulted by its writer before every
transaction and told of every failure. The first sign of damage (a replaced file, a
deleted WAL, structural corruption on a write) is sticky for that file in this process:
every later write fails fast with the same cause, no handle in the process opens the
path again, and closing skips the checkpoint, so a damaged file is never made worse by
the process that noticed it. Two exceptions to "no handle opens the path again": a
replaced file's old handles stay refused, and the file now at the path, another
generation, is opened afresh by new handles, whether the old ones are still open or were
closed (registry.py retires the old one first); and
a file this process healed in place (repair.py, which runs only while the process has no
handle on it) is opened again, so the spool of its refused writes can be replayed.
"""

from __future__ import annotations

import threading
from pathlib import Path

import apsw

from ....errors import Cause, StoreDamaged, classify
from . import walowner
from .identity import FileGuard, Finding, descriptors_of

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
