"""The one writer of a database file in this process, with group commit.

Each file has exactly one writable connection per process. Callers submit a unit of work
(a function of that connection) and are acknowledged once it is committed. Requests that
queue up while a commit is in progress are committed together in the next transaction,
each inside its own savepoint, so one failing request does not abort the others and one
fsync serves them all.

Who runs a group: the connection is guarded by one lock. A caller that finds it free
runs the queued group itself (a lone writer pays no thread hand-off, which costs as much
as an fsync on a fast disk; one that finds nothing queued either commits its request as a
group of its own without queueing it), and before letting go commits a few more groups
for callers that queued meanwhile. What is still queued when the lock is released goes
to the writer thread, which commits whatever is queued whenever the lock comes free.

The writer numbers its transactions and keeps the number of the last that committed with
every request's work in it (`kept_whole`): what a request learned in its transaction
(the store's LastAppend) holds after it only if that transaction is the one kept.

At durability "full" in WAL, COMMIT does not wait for the disk: the transaction is written
at synchronous=NORMAL, the connection is let go, and then the WAL is synced (`set_sync`,
the section on the WAL's sync below says why that keeps the promise) by the caller that committed, or by the one
already syncing, whose sync covers every commit written before it began. So the next
group is written while the disk syncs the last, and a request is acknowledged only once
a sync that began after its COMMIT has returned.

An interrupted caller never cancels a write it submitted: if KeyboardInterrupt lands
while a caller is running a group, the transaction is rolled back and the whole group is
handed to the writer thread, which commits it; the caller sees the interrupt, and the
other callers in the group are acknowledged as usual.
"""

from __future__ import annotations

import errno
import itertools
import os
import threading
from collections import deque
from pathlib import Path
from typing import Any, Callable, Generic, TypeVar

import apsw

from ... import telemetry
from ...errors import DiskFull, StorageError, StoreBusy, StoreClosed
from ...files import descriptors_of
from .errors import convert

T = TypeVar("T")
Work = Callable[[apsw.Connection], T]

MAX_GROUP = 512  # requests per transaction; bounds the time one group holds the lock
LINGER_GROUPS = 8  # groups a caller may commit for others after its own, bounding its wait


class Outcome(Generic[T]):
    """The acknowledgement of one submitted unit of work: its result or its error, once.

    Lighter than concurrent.futures.Future, which costs a Condition per request and a
    notify per outcome: the caller that runs its own group never waits, and one that
    does waits on a single lock that the outcome's delivery releases.
    """

    __slots__ = ("_finished", "_result", "_error", "_ready")

    def __init__(self) -> None:
        self._finished = False
        self._result: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Lock()
        self._ready.acquire()  # released once, when the outcome is set

    def done(self) -> bool:
        return self._finished

    def set_result(self, result: T) -> None:
        self._result = result
        self._settle()

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._settle()

    def result(self) -> T:
        """Wait for the outcome (an interrupt while waiting leaves the write to land)."""
        if not self._finished:
            with self._ready:
                pass
        if self._error is not None:
            raise self._error
        return self._result

    def _settle(self) -> None:
        self._finished = True
        self._ready.release()


class _Request:
    __slots__ = ("work", "future", "in_transaction", "committed")

    def __init__(self, work: Work[Any], in_transaction: bool) -> None:
        self.work = work
        self.future: Outcome = Outcome()
        self.in_transaction = in_transaction
        self.committed = False  # its transaction committed; acknowledged once a sync covers it


Outcomes = list[tuple[_Request, Any, "BaseException | None"]]


class Writer:
    """Owns one writable connection; see the module docstring."""

    def __init__(
        self,
        opener: Callable[[], apsw.Connection],
        name: str,
        *,
        before_group: Callable[[apsw.Connection], None] = lambda conn: None,
        on_error: Callable[[BaseException], None] = lambda exc: None,
    ) -> None:
        """`before_group` runs before each transaction and may refuse it by raising;
        `on_error` sees every failure of a unit of work or a commit."""
        self._before_group = before_group
        self._on_error = on_error
        self._queue: deque[_Request] = deque()
        # Each Condition's lock is taken on its own (a C-level `with`), the Condition used
        # only to wait and to wake: its own `with` runs Python code, several times an
        # append, and an interrupt can land inside it.
        self._queue_lock = threading.Lock()
        self._wakeup = threading.Condition(self._queue_lock)
        self._connection_lock = threading.Lock()
        self._stopping = False
        self._committing = False  # set while COMMIT runs: tells an interrupt what happened
        self.transactions = 0  # write transactions begun on the connection, numbering them
        self.kept_whole = 0  # the number of the last that committed with no request's work undone
        self._outcomes: Outcomes = []
        # Syncing after COMMIT (set_sync): commits are numbered as they are made, and held
        # with their outcomes until a sync covers them.
        self._sync: Callable[[], None] | None = None
        self._sync_lock = threading.Lock()
        self._syncs = threading.Condition(self._sync_lock)
        self._commits = 0  # transactions committed so far (while syncing after COMMIT)
        self._synced = 0  # the highest commit a finished sync covered
        self._syncing = False  # a caller is syncing; the others wait for it
        self._unsynced: deque[tuple[int, Outcomes]] = deque()
        self._suspect = False  # a sync failed: the WAL is checkpointed before the next commit
        self._failed_sync: tuple[int, BaseException] | None = None  # (last commit it covered, error)
        self._conn = opener()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Work[T], *, in_transaction: bool = True) -> Outcome[T]:
        """Queue `work` (or, alone, commit it at once); the Outcome holds its result once committed."""
        request = _Request(work, in_transaction)
        with self._queue_lock:
            if self._stopping:
                raise StoreClosed("the store's writer has stopped; open the store again")
            # Alone: nothing queued and the connection free, so there is no group to gather
            # and the request is committed without passing through the queue.
            alone = in_transaction and not self._queue and self._connection_lock.acquire(blocking=False)
            if not alone:
                self._queue.append(request)
        if alone or self._connection_lock.acquire(blocking=False):
            try:
                if alone:
                    self._commit_group([request])
                if not alone or self._queue:  # callers that queued meanwhile wait for the holder
                    self._drain(until=request, linger=LINGER_GROUPS)
            except BaseException:
                if alone:
                    self._recover_interrupted()
                    if not _settled(request):  # rolled back and never queued: the writer thread commits it
                        with self._queue_lock:
                            self._queue.appendleft(request)
                raise
            finally:
                self._connection_lock.release()
                self._wake_writer_if_queued()
            try:
                self._sync_committed()
            except BaseException:
                self._wake_writer()  # interrupted: the writer thread syncs what this caller committed
                raise
        # Otherwise the lock holder takes this request: it drains the queue before it lets
        # go of the connection, and wakes the writer thread for whatever arrives after.
        return request.future

    def run(self, work: Work[T], *, in_transaction: bool = True) -> T:
        """Submit `work` and wait for its acknowledgement."""
        return self.submit(work, in_transaction=in_transaction).result()

    def set_sync(self, sync: Callable[[], None] | None) -> None:
        """Sync with `sync` after COMMIT, outside the connection (the connection then commits at
        synchronous=NORMAL), or with None acknowledge as COMMIT returns. Called from a unit
        of work (or before any is submitted), so that no commit falls between this and the
        change of the connection's synchronous setting. Commits still waiting when it is
        turned off are acknowledged by the next sync as they are: the durability that asked
        for them was let go."""
        self._sync = sync

    @property
    def syncs_after_commit(self) -> bool:
        return self._sync is not None

    def stop(self) -> None:
        """Commit everything already submitted, then close the connection."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        self._thread.join()

    # --- running groups (with the connection lock held) --------------------------------

    def _drain(self, until: _Request | None, linger: int = 0) -> None:
        """Run queued groups until `until` is done (for None: until the queue is empty),
        then up to `linger` more groups while others are waiting: serving them here saves
        each a wake-up of the writer thread."""
        try:
            while until is None or not _settled(until) or linger > 0:
                if until is not None and _settled(until):
                    linger -= 1
                group = self._take_group()
                if not group:
                    return
                if group[0].in_transaction:
                    self._commit_group(group)
                else:
                    self._run_alone(group[0])
                self._forget_done()
        except BaseException:
            self._recover_interrupted()
            raise

    def _recover_interrupted(self) -> None:
        """KeyboardInterrupt landed while this thread held the connection: finish honestly.

        Requests leave the queue only once they are done, so nothing can be lost between
        taking a group and running it. If the COMMIT went through, its group is
        acknowledged; an open transaction is rolled back, and its requests, still queued,
        are committed by the writer thread.
        """
        if self._committing and not self._conn.in_transaction:
            self._acknowledge(self._outcomes)
            if self._sync is not None:
                self._wake_writer()  # the writer thread syncs them: this caller will not
        elif self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._committing = False

    def _take_group(self) -> list[_Request]:
        """The next group: every queued transactional request (or one control request).

        The requests stay at the head of the queue until they are done (_forget_done)."""
        with self._queue_lock:
            self._forget_done_locked()
            if not self._queue:
                return []
            first = self._queue[0]
            if not first.in_transaction:
                return [first]
            return list(itertools.takewhile(lambda r: r.in_transaction, itertools.islice(self._queue, MAX_GROUP)))

    def _forget_done(self) -> None:
        with self._queue_lock:
            self._forget_done_locked()

    def _forget_done_locked(self) -> None:
        while self._queue and _settled(self._queue[0]):
            self._queue.popleft()

    def _run_alone(self, request: _Request) -> None:
        try:
            result = request.work(self._conn)
        except Exception as exc:  # noqa: BLE001 - delivered to the caller
            request.future.set_exception(self._error(exc))
        else:
            self._acknowledge([(request, result, None)])

    def _commit_group(self, group: list[_Request]) -> None:
        conn = self._conn
        self._committing = False
        self._outcomes = outcomes = []  # (request, result, error), read by _recover_interrupted
        try:
            self._before_group(conn)
            if self._suspect:
                self._checkpoint_after_failed_sync(conn)
            conn.execute("BEGIN IMMEDIATE")
        except Exception as exc:  # noqa: BLE001
            self._fail(group, exc)
            return
        self.transactions += 1
        whole = True
        # A lone request needs no savepoint: if it fails, the transaction is rolled back.
        savepoints = len(group) > 1
        for request in group:
            try:
                if savepoints:
                    conn.execute("SAVEPOINT request")
                result = request.work(conn)
                if savepoints:
                    conn.execute("RELEASE request")
                outcomes.append((request, result, None))
            except Exception as exc:  # noqa: BLE001
                whole = False
                if conn.in_transaction:
                    conn.execute("ROLLBACK TO request; RELEASE request" if savepoints else "ROLLBACK")
                    rolled_back = [request]
                else:
                    # SQLite rolled the whole transaction back (I/O error, disk full,
                    # corruption): nothing in this group was written.
                    rolled_back = group
                if rolled_back is group:
                    self._fail(group, exc)  # none of it may be acknowledged
                    return
                outcomes.append((request, None, self._error(exc)))
        if conn.in_transaction:
            self._committing = True
            try:
                conn.execute("COMMIT")
            except Exception as exc:  # noqa: BLE001
                self._committing = False
                if conn.in_transaction:
                    conn.execute("ROLLBACK")  # a failed COMMIT can leave the transaction open
                self._fail(group, exc)
                return
            if whole:
                self.kept_whole = self.transactions
        if telemetry.recording:
            telemetry.committed_together(len(group), "sqlite")
        self._acknowledge(outcomes)
        self._committing = False

    def _acknowledge(self, outcomes: Outcomes) -> None:
        """Deliver a committed transaction's outcomes, or hold them for the sync after COMMIT."""
        if self._sync is None:
            _deliver(outcomes)
            return
        for request, _, _ in outcomes:
            request.committed = True
        with self._sync_lock:
            self._commits += 1
            self._unsynced.append((self._commits, outcomes))

    def _checkpoint_after_failed_sync(self, conn: apsw.Connection) -> None:
        """After a failed sync the kernel may have dropped the pages of commits already made;
        a later sync succeeding would then leave acknowledged commits behind a hole in the
        log, lost at the next power cut. So nothing more is committed until the whole WAL
        is in the main file, synced there, and the log is started over."""
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise StoreBusy("the disk failed a sync of the store's log, and the checkpoint that must follow is "
                            "held up by a reader in another process; retry once it finishes")
        self._suspect = False

    # --- the sync after COMMIT (without the connection lock) ---------------------------

    def _sync_committed(self) -> None:
        """Return once every commit made so far is synced and settled: lead a sync, or wait
        for the one running and lead the next if it began before the last commit.

        A leader's mark (`_syncing`) is set and cleared inside one try: an interrupt landing
        between taking the lead and starting the sync would otherwise leave the mark set, and
        every later sync, the writer thread's included, waiting for a leader that is gone.
        The lock is taken on its own (a C-level with), so no Python code of the standard
        library runs between taking it and letting it go."""
        if self._synced >= self._commits:
            return
        target = self._commits
        while True:
            leading = finished = False
            try:
                with self._sync_lock:
                    while self._synced < target and self._syncing:
                        self._syncs.wait()
                    if self._synced >= target:
                        return
                    self._syncing = leading = True
                    covered = self._commits  # every commit counted has its frames written
                self._lead_sync(covered)
                finished = True
            finally:
                if leading:
                    with self._sync_lock:
                        if not finished and self._unsynced:
                            self._synced = min(self._synced, self._unsynced[0][0] - 1)
                        self._syncing = False
                        self._syncs.notify_all()

    def _lead_sync(self, covered: int) -> None:
        """Sync, then settle the commits held up to `covered`, each let go only once settled:
        an interrupt leaves the rest, and a sync, to the next leader (the writer thread,
        which the interrupted caller wakes in submit)."""
        sync = self._sync
        if sync is not None:
            try:
                sync()
            except Exception as exc:  # noqa: BLE001 - delivered to the callers it covered
                self._failed_sync = (covered, exc)
                self._suspect = True
        self._synced = max(self._synced, covered)
        while self._unsynced and self._unsynced[0][0] <= covered:
            self._settle(*self._unsynced[0])
            self._unsynced.popleft()

    def _settle(self, number: int, outcomes: Outcomes) -> None:
        """Acknowledge a synced commit's outcomes; after a failed sync that covered it, the
        writes it holds are refused instead (they may not be durable), never acknowledged."""
        failed = self._failed_sync
        if failed is not None and number <= failed[0]:
            self._fail([request for request, _, error in outcomes if error is None], failed[1])
        _deliver(outcomes)

    def _error(self, exc: BaseException) -> BaseException:
        self._on_error(exc)
        return convert(exc)

    def _fail(self, group: list[_Request], exc: BaseException) -> None:
        error = self._error(exc)
        waiting = [r for r in group if not r.future.done()]
        for i, request in enumerate(waiting):
            request.future.set_exception(error if i == 0 else _copy(error))

    # --- the writer thread -------------------------------------------------------------

    def _wake_writer_if_queued(self) -> None:
        # Checked without the lock first: this runs after every write, and a request queued
        # after the check is handled by its own caller, who finds the connection free.
        if self._queue:
            self._wake_writer()

    def _wake_writer(self) -> None:
        with self._wakeup:
            self._wakeup.notify()

    def _serve(self) -> None:
        """Commit (and sync) whatever callers left queued; on stop, finish the queue and close."""
        while True:
            with self._wakeup:
                while not self._queue and not self._stopping and self._synced >= self._commits:
                    self._wakeup.wait()
                stopping = self._stopping and not self._queue
            with self._connection_lock:
                if stopping:
                    self._sync_committed()
                    self._conn.close()
                    return
                self._drain(until=None)
            self._sync_committed()


def _settled(request: _Request) -> bool:
    """Done with the connection: acknowledged or refused, or committed and awaiting its sync."""
    return request.committed or request.future.done()


def _deliver(outcomes: Outcomes) -> None:
    for request, result, error in outcomes:
        if request.future.done():
            continue
        if error is None:
            request.future.set_result(result)
        else:
            request.future.set_exception(error)


def _copy(error: BaseException) -> BaseException:
    """A fresh instance per waiting caller: one exception object raised in several threads
    would share (and garble) its traceback."""
    try:
        fresh = type(error)(*error.args)
    except TypeError:
        return error
    fresh.__dict__.update(error.__dict__)
    fresh.__cause__ = error.__cause__
    return fresh


# --- the WAL synced after COMMIT ------------------------------------------------------
#
# Making commits durable outside the write lock: the WAL synced after COMMIT, not in it.
#
# At durability "full", SQLite's own way (synchronous=FULL) syncs the WAL inside COMMIT,
# while the transaction still holds the database's write lock: nobody, in this process or
# another, can write the next transaction during the sync, so every commit waits for the
# disk twice over, once for its own sync and once for the one before it. Instead the
# writer's connection commits at synchronous=NORMAL (the frames are written, not synced),
# lets go of the lock, and only then syncs the WAL (WalSync) before it acknowledges; the
# next transaction is written during that sync, and one sync covers every commit written
# before it began (the writer above).
#
# Why this keeps the promise of "full" (an acknowledged write survives power loss):
# - A sync of the WAL makes every frame written to it before the sync durable, and WAL
#   recovery replays a log up to its first invalid frame: once a commit's sync returns,
#   that commit and all before it survive.
# - At NORMAL, SQLite still syncs the WAL before each checkpoint copies it into the main
#   file, the main file after it, and the WAL's header when the log starts over, exactly
#   as at FULL: only the sync at COMMIT moves here.
# - What changes is who can see an unsynced commit: readers (and the search index) may read
#   a commit a power cut then takes away, as at durability "normal". It was never
#   acknowledged, and the index is built to follow a store that lost commits (indexer.py).
#
# The sync goes to the WAL file SQLite writes: a descriptor duplicated from one SQLite
# opened on it (the WAL holds no POSIX lock, so ours closing drops nothing), or, for a
# store opened through a VFS of its own (the test shims), a handle opened through that VFS,
# so that the VFS sees and can fail this sync like any other. Where neither is possible
# (no /proc/self/fd), the store keeps synchronous=FULL.

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
