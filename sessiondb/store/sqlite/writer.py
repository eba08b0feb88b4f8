"""The one writer of a database file in this process, with group commit.

Each file has exactly one writable connection per process. Callers submit a unit of work
(a function of that connection) and are acknowledged once it is committed. Requests that
queue up while a commit is in progress are committed together in the next transaction,
each inside its own savepoint, so one failing request does not abort the others and one
fsync serves them all.

Who runs a group: the connection is guarded by one lock. A caller that finds it free
runs the queued group itself (a lone writer pays no thread hand-off, which costs as much
as an fsync on a fast disk), and before letting go commits a few more groups for callers
that queued meanwhile. What is still queued when the lock is released goes to the writer
thread, which commits whatever is queued whenever the lock comes free.

An interrupted caller never cancels a write it submitted: if KeyboardInterrupt lands
while a caller is running a group, the transaction is rolled back and the whole group is
handed to the writer thread, which commits it; the caller sees the interrupt, and the
other callers in the group are acknowledged as usual.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from typing import Any, Callable, Generic, TypeVar

import apsw

from ...errors import StoreClosed
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
    __slots__ = ("work", "future", "in_transaction")

    def __init__(self, work: Work[Any], in_transaction: bool) -> None:
        self.work = work
        self.future: Outcome = Outcome()
        self.in_transaction = in_transaction


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
        self._wakeup = threading.Condition(threading.Lock())
        self._connection_lock = threading.Lock()
        self._stopping = False
        self._committing = False  # set while COMMIT runs: tells an interrupt what happened
        self._outcomes: list[tuple[_Request, Any, BaseException | None]] = []
        self._conn = opener()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Work[T], *, in_transaction: bool = True) -> Outcome[T]:
        """Queue `work`; the Outcome holds its result once committed."""
        request = _Request(work, in_transaction)
        with self._wakeup:
            if self._stopping:
                raise StoreClosed("the store's writer has stopped; open the store again")
            self._queue.append(request)
        if self._connection_lock.acquire(blocking=False):
            try:
                self._drain(until=request, linger=LINGER_GROUPS)
            finally:
                self._connection_lock.release()
                self._wake_writer_if_queued()
        # Otherwise the lock holder takes this request: it drains the queue before it lets
        # go of the connection, and wakes the writer thread for whatever arrives after.
        return request.future

    def run(self, work: Work[T], *, in_transaction: bool = True) -> T:
        """Submit `work` and wait for its acknowledgement."""
        return self.submit(work, in_transaction=in_transaction).result()

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
            while until is None or not until.future.done() or linger > 0:
                if until is not None and until.future.done():
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
            _deliver(self._outcomes)
        elif self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._committing = False

    def _take_group(self) -> list[_Request]:
        """The next group: every queued transactional request (or one control request).

        The requests stay at the head of the queue until they are done (_forget_done)."""
        with self._wakeup:
            self._forget_done_locked()
            if not self._queue:
                return []
            first = self._queue[0]
            if not first.in_transaction:
                return [first]
            return list(itertools.takewhile(lambda r: r.in_transaction, itertools.islice(self._queue, MAX_GROUP)))

    def _forget_done(self) -> None:
        with self._wakeup:
            self._forget_done_locked()

    def _forget_done_locked(self) -> None:
        while self._queue and self._queue[0].future.done():
            self._queue.popleft()

    def _run_alone(self, request: _Request) -> None:
        try:
            result = request.work(self._conn)
        except Exception as exc:  # noqa: BLE001 - delivered to the caller
            request.future.set_exception(self._error(exc))
        else:
            request.future.set_result(result)

    def _commit_group(self, group: list[_Request]) -> None:
        conn = self._conn
        self._committing = False
        self._outcomes = outcomes = []  # (request, result, error), read by _recover_interrupted
        try:
            self._before_group(conn)
            conn.execute("BEGIN IMMEDIATE")
        except Exception as exc:  # noqa: BLE001
            self._fail(group, exc)
            return
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
        _deliver(outcomes)
        self._committing = False

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
            with self._wakeup:
                self._wakeup.notify()

    def _serve(self) -> None:
        """Commit whatever callers left queued; on stop, finish the queue and close."""
        while True:
            with self._wakeup:
                while not self._queue and not self._stopping:
                    self._wakeup.wait()
                stopping = self._stopping and not self._queue
            with self._connection_lock:
                if stopping:
                    self._conn.close()
                    return
                self._drain(until=None)


def _deliver(outcomes: list[tuple[_Request, Any, BaseException | None]]) -> None:
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
