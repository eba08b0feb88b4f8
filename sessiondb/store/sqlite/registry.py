"""One shared handle per database file per process.

Every `open_store` of a file gets the same SharedFile, keyed by the file's identity
(device, inode), so two paths to one file (a symlinked home, a bind mount) still share one
writer. Each open takes a reference; closing a store drops its reference and the last
one stops the writer and closes the read connections, so a handle closed by one caller
never tears down a writer another caller holds.

After fork() the child must not touch connections it inherited (their locks belong to
the parent): the registry forgets them without closing them.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import apsw

from ... import home as homes
from ...errors import Cause, DiskFull, StoreDamaged
from ...files import claim_private
from .safety.holders import holders
from .safety.containment import (
    Containment, damaged_error, forget_replaced, no_checkpoint_on_close, refuse_if_damaged,
)
from .safety.probe import startup_probe, unclean_shutdown
from .safety.schema import refuse_damaged_schema
from .safety.walowner import set_aside_foreign_wal
from .connect import CACHE_KIB, configure_reader, configure_writer, connect, set_durability
from .errors import convert
from .index import schema as index_schema
from .index.indexer import INDEX_MARKS, STORE_MARKS, Indexer
from .migrations import check_ownership, migrate
from .writer import WalSync, Writer

T = TypeVar("T")
READERS = 4  # read connections per file; readers never wait for the writer in WAL


class SharedFile:
    """The writer and the read pool of one database file, shared by every handle on it."""

    def __init__(self, path: Path, *, durability: str, patience: float, vfs: str | None) -> None:
        self.path = path
        self.key: tuple[int, int] | None = None
        self.refs = 0
        self._durabilities: Counter[str] = Counter()
        self._patience = patience
        self._vfs = vfs
        self._idle: queue.LifoQueue[apsw.Connection] = queue.LifoQueue()
        self._readers = threading.BoundedSemaphore(READERS)
        self._readers_lock = threading.Lock()
        self._all_readers: list[apsw.Connection] = []
        self.journal_mode = ""
        self.containment = Containment(path)
        self.retired = False  # replaced underneath and closed: every handle left on it is refused
        self.full: DiskFull | None = None  # opened for reading only, the disk being full
        self._wal_sync: WalSync | None = None  # made once the writer has the WAL open
        self._sync_at_open: WalSync | None = None  # the sync after COMMIT the writer opened with
        try:
            self.writer: Writer | FullDisk = Writer(
                lambda: self._open_writer(durability),
                name=f"sessiondb-writer:{path}",
                before_group=self.containment.before_group,
                on_error=self.containment.on_error,
            )
        except DiskFull as full:
            if not readable_from_the_main_file(path):
                raise
            # Reads need no room: the main file alone holds a cleanly closed store, read
            # without the -shm that could not grow. Writes are refused with the same cause.
            self.full = full
            self.writer = FullDisk(full)
        else:
            self.writer.set_sync(self._sync_at_open)  # no write can have been submitted yet
        # The search index, off the acknowledgement path (invariant 9): its own file and
        # thread; readers attach it (at the indexer's generation) when they search.
        self.indexer = Indexer(path, patience=patience, vfs=vfs)
        self._attached: dict[int, int] = {}
        if self.full is None:
            self._adopt_index()

    def _adopt_index(self) -> None:
        """Open the index now, before this process writes: an index left ahead of the store
        (a power cut at durability normal lost the store's last commits) is started over
        before new rows could take the lost ids. Its trouble never stops the store opening."""
        try:
            self.indexer.marks()
        except apsw.Error as exc:
            try:
                self.indexer.heal(exc)
            except apsw.Error:
                pass  # searches report it; writes never depend on the index

    def _open_writer(self, durability: str) -> apsw.Connection:
        homes.ensure_private_dir(self.path.parent)
        # SQLite gives the WAL and shm the main file's mode: a main file made 0600 before
        # SQLite first sees it leaves no moment in which any of them is readable by others.
        claim_private(self.path, homes.SIDECAR_SUFFIXES)
        conn = None
        try:
            # Before SQLite sees the files: a WAL written for a file since replaced is set
            # aside, never read over the main file that replaced it (S-13).
            set_aside_foreign_wal(self.path)
            unclean = unclean_shutdown(self.path)  # a WAL left behind that nobody holds
            conn = connect(self.path, patience=self._patience, vfs=self._vfs)
            # Refuse a file that is not ours before changing anything about it.
            check_ownership(conn)
            refuse_damaged_schema(conn, self.path)  # what the doctor would report, open refuses
            if unclean:
                startup_probe(conn, self.path)  # structural damage stops us before any write
            # Tighten a file that was already there before the first write creates the
            # WAL, which SQLite gives the main file's mode.
            homes.make_private(self.path)
            self.journal_mode = configure_writer(conn, self.path, durability)
            if migrate(conn) and self.journal_mode == "wal":
                # Put a new file's identity page into the main file now, so a copy over
                # the store is recognised from the first write on.
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            homes.make_private(self.path)
            self.containment.attach(conn, self.journal_mode)
            self._sync_at_open = self._set_durability(conn, durability)
        except BaseException as exc:
            if conn is not None:
                # An open that failed (foreign, newer, damaged file) leaves the file as it was.
                no_checkpoint_on_close(conn)
                conn.close()
            raise convert(exc, self.path) from None
        return conn

    # --- durability: the strictest any open handle asked for --------------------------

    def hold(self, durability: str) -> None:
        self.refs += 1
        before = self._effective()
        self._durabilities[durability] += 1
        self._apply_if_changed(before)

    def unhold(self, durability: str) -> int:
        before = self._effective()
        self._durabilities[durability] -= 1
        self.refs -= 1
        if self.refs:
            self._apply_if_changed(before)
        return self.refs

    def _effective(self) -> str:
        return "full" if self._durabilities["full"] or not self._durabilities else "normal"

    def _apply_if_changed(self, before: str) -> None:
        after = self._effective()
        if after != before and self.full is None:
            self.writer.run(lambda conn: self.writer.set_sync(self._set_durability(conn, after)),
                            in_transaction=False)

    def _set_durability(self, conn: apsw.Connection, durability: str) -> WalSync | None:
        """Set the writer's connection for `durability`; returns the sync to run after COMMIT.
        "full" in WAL syncs after COMMIT, outside the write lock (writer.py), when the WAL's
        file can be had for it; else SQLite syncs in COMMIT (or, at "normal", nothing does)."""
        after_commit = durability == "full" and self.journal_mode == "wal"
        if after_commit and self._wal_sync is None:
            self._wal_sync = WalSync.of(self.path, self._vfs)
        sync = self._wal_sync if after_commit else None
        set_durability(conn, "normal" if sync is not None else durability)
        return sync

    # --- reads -------------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[apsw.Connection]:
        """A read connection for the duration of the block (at most READERS at once)."""
        self._readers.acquire()
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = connect(self.path, patience=self._patience, vfs=self._vfs, immutable=self.full is not None)
                conn.execute(index_schema.TERMS)
                configure_reader(conn)
                with self._readers_lock:
                    self._all_readers.append(conn)
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._idle.put(conn)
        finally:
            self._readers.release()

    def read(self, work: Callable[[apsw.Connection], T]) -> T:
        """Run `work` in one read transaction (a consistent snapshot)."""
        try:
            with self.reader() as conn:
                conn.execute("BEGIN")
                try:
                    return work(conn)
                finally:
                    conn.execute("COMMIT")
        except apsw.Error as exc:
            raise convert(exc) from None

    def retire(self) -> None:
        """Stop serving a file found replaced, so that the file now at its path can be
        opened: the connections close without a checkpoint (they hold the replaced file's
        WAL and shared memory, which a new connection in this process would share)."""
        self.retired = True
        self.close()

    def retired_error(self) -> StoreDamaged:
        return damaged_error(self.path, self.containment.finding)

    def examine(self, work: Callable[[apsw.Connection, int], T]) -> T:
        """Like search, but the index is only caught up if it can be (a full disk cannot
        take its batch): `work` reads it as it is and can tell from its marks."""
        try:
            return self._search(work, best_effort=True)
        except apsw.Error as exc:
            raise convert(exc) from None

    def search(self, work: Callable[[apsw.Connection, int], T]) -> T:
        """Run `work(conn, touched_to)` in one read transaction with the search index
        attached as `idx` and covering everything the store held when the call began.
        Damage found in the index is healed (rebuilt) once when nobody else holds it."""
        try:
            return self._search(work)
        except apsw.Error as exc:
            if not self.indexer.heal(exc):
                raise convert(exc) from None
        try:
            return self._search(work)
        except apsw.Error as exc:
            raise convert(exc) from None

    def _search(self, work: Callable[[apsw.Connection, int], T], best_effort: bool = False) -> T:
        with self.reader() as conn:
            self._attach_index(conn)
            conn.execute("BEGIN")
            try:
                # The index's marks first: the store's snapshot, read next, is then as new
                # or newer, so anything the index lacks shows as the index being behind.
                indexed = conn.execute(INDEX_MARKS).fetchone()
                target = conn.execute(STORE_MARKS).fetchone()
                if indexed[0] >= target[0] and indexed[1] >= target[1]:
                    return work(conn, indexed[1])
            finally:
                conn.execute("COMMIT")
            if self.full is not None:
                if best_effort:
                    return self._read_index(conn, work)
                # Read from its main file like the store, the index is behind (it is caught
                # up at every clean close): its next batch needs room.
                raise DiskFull(f"{self.full} The search index is behind the store and cannot be brought up "
                               "to date until space is freed.")
            try:
                self.indexer.catch_up(target)
            except apsw.Error:
                if not best_effort:
                    raise
            self._attach_index(conn)  # a rebuild may have made a new file meanwhile
            return self._read_index(conn, work)

    @staticmethod
    def _read_index(conn: apsw.Connection, work: Callable[[apsw.Connection, int], T]) -> T:
        conn.execute("BEGIN")
        try:
            return work(conn, conn.execute(INDEX_MARKS).fetchone()[1])
        finally:
            conn.execute("COMMIT")

    def _attach_index(self, conn: apsw.Connection) -> None:
        generation = self.indexer.generation
        if self._attached.get(id(conn)) == generation:
            return
        if id(conn) in self._attached:
            conn.execute("DETACH idx")
        if self.full is None:
            self.indexer.marks()  # opens (creates) the index file first
        conn.execute("ATTACH ? AS idx", (index_schema.uri(index_schema.path_of(self.path), self._vfs,
                                                          immutable=self.full is not None),))
        # An attached file gets SQLite's default cache (2 MB), less than a common word's
        # doclists: searches would read them from the OS again every time.
        conn.execute(f"PRAGMA idx.cache_size=-{CACHE_KIB}")
        self._attached[id(conn)] = generation

    def close(self) -> None:
        if self.containment.finding is not None:
            self.indexer.close_without_checkpoint()
        elif self.full is None and not self.retired:
            self.indexer.settle()  # a clean close leaves the index caught up with the store
        self.indexer.stop()
        self.writer.stop()
        if self._wal_sync is not None:
            self._wal_sync.close()
        self.containment.close()
        with self._readers_lock:
            for conn in self._all_readers:
                if self.containment.finding is not None:
                    no_checkpoint_on_close(conn)
                if id(conn) in self._attached:
                    _detach_index(conn)
                conn.close()
            self._all_readers.clear()


def _detach_index(conn: apsw.Connection) -> None:
    """Detaching the last connection on the index file checkpoints it; if that fails
    (SQLite gives up on it quietly, APSW raises it), the index's WAL stays for the next
    open. The index never fails a store's close."""
    try:
        conn.execute("DETACH idx")
    except apsw.Error:
        pass


class FullDisk:
    """The writer of a file opened on a full disk: every write is refused as disk_full.
    The handle reads; once space is freed, a store opened after every handle on the file
    closed writes again."""

    def __init__(self, full: DiskFull) -> None:
        self._full = full

    def run(self, work: Callable[[apsw.Connection], T], *, in_transaction: bool = True) -> T:
        raise DiskFull(f"{self._full} The store was opened for reading only; close every handle on it once "
                       "space is freed, then open it again to write.")

    def stop(self) -> None:
        pass


def readable_from_the_main_file(path: Path) -> bool:
    """Whether the main file alone holds the whole store: no WAL or journal content (a
    clean close checkpointed everything) and no other process that could be writing."""
    for suffix in ("-wal", "-journal"):
        try:
            if os.stat(f"{path}{suffix}").st_size:
                return False
        except FileNotFoundError:
            continue
    return path.exists() and not holders(path)


_lock = threading.Lock()
_files: dict[tuple[int, int], SharedFile] = {}
_opening: dict[Path, threading.Lock] = {}
_forgotten_after_fork: list[SharedFile] = []


def acquire(path: Path, *, durability: str, patience: float, vfs: str | None = None) -> SharedFile:
    """The SharedFile for `path`, opened on first use; each call takes one reference."""
    with _lock:
        path_lock = _opening.setdefault(path, threading.Lock())
    # Opening a new file can wait on other processes (migrations take the write lock):
    # serialise per path only, so a slow store does not hold up opening the others.
    with path_lock:
        _retire_replaced(path)
        refuse_if_damaged(path)
        with _lock:
            shared = _existing(path)
            if shared is not None:
                shared.hold(durability)
                return shared
        shared = SharedFile(path, durability=durability, patience=patience, vfs=vfs)
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        with _lock:
            twin = _files.get(key)
            if twin is None:
                shared.key = key
                _files[key] = shared
        if twin is not None:  # the same file reached through another path
            shared.close()
            with _lock:
                twin.hold(durability)
            return twin
        with _lock:
            shared.hold(durability)
        return shared


def _retire_replaced(path: Path) -> None:
    """Retire the files open at `path` that were found replaced (S-13, S-28): their handles
    stay refused while a new handle opens the generation now at the path. A replaced file
    whose handles were all closed already is forgotten too: nothing is left in this process
    that could write to it, and the open that follows examines the file now at the path
    (its foreign WAL is set aside, or the open is refused while another process holds it)."""
    with _lock:
        stale = [f for f in _files.values() if f.path == path and f.containment.finding is not None
                 and f.containment.finding.cause is Cause.REPLACED]
        for shared in stale:
            del _files[shared.key]
    for shared in stale:
        shared.retire()
    forget_replaced(path)


def release(shared: SharedFile, durability: str) -> None:
    """Drop one reference; the last one closes the file's writer and readers."""
    with _lock:
        remaining = shared.unhold(durability)
        if remaining == 0 and _files.get(shared.key) is shared:
            del _files[shared.key]
    if remaining == 0:
        shared.close()


def _existing(path: Path) -> SharedFile | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return _files.get((st.st_dev, st.st_ino))


def _forget_after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    _opening.clear()
    _forgotten_after_fork.extend(_files.values())  # kept referenced: never closed here
    _files.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
