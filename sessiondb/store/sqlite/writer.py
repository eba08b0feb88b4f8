"""The one writer of a database file in this process, with group commit.

Each file has exactly one writable connection per process. Callers submit a unit of work
(a function of that connection) and are acknowledged once it is committed. Requests that
queue up while a commit is in progress are committed together in the next transaction,
each inside its own savepoint, so one failing request does not abort the others and one
fsync serves them all.

Who runs a group: the connection is guarded by one lock. A caller that finds it free
runs the queued group itself (a lone writer pays no thread hand-off, which costs as much
as an fsync on a fast disk); otherwise its request waits for the writer thread, which
commits whatever is queued whenever the lock comes free.

An interrupted caller never cancels a write it submitted: if KeyboardInterrupt lands
while a caller is running a group, the transaction is rolled back and the whole group is
handed to the writer thread, which commits it; the caller sees the interrupt, and the
other callers in the group are acknowledged as usual.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, TypeVar

import apsw

from ...errors import StoreClosed
from .errors import convert

T = TypeVar("T")
Work = Callable[[apsw.Connection], T]

MAX_GROUP = 512  # requests per transaction; bounds the time one group holds the lock


class _Request:
    __slots__ = ("work", "future", "in_transaction")

    def __init__(self, work: Work[Any], in_transaction: bool) -> None:
        self.work = work
        self.future: Future = Future()
        self.in_transaction = in_transaction


class Writer:
    """Owns one writable connection; see the module docstring."""

    def __init__(self, opener: Callable[[], apsw.Connection], name: str) -> None:
        self._queue: deque[_Request] = deque()
        self._wakeup = threading.Condition(threading.Lock())
        self._connection_lock = threading.Lock()
        self._stopping = False
        self._committing = False  # set while COMMIT runs: tells an interrupt what happened
        self._outcomes: list[tuple[_Request, Any, BaseException | None]] = []
        self._conn = opener()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Work[T], *, in_transaction: bool = True) -> Future:
        """Queue `work`; the Future resolves to its result once committed."""
        request = _Request(work, in_transaction)
        with self._wakeup:
            if self._stopping:
                raise StoreClosed("the store's writer has stopped; open the store again")
            self._queue.append(request)
        if self._connection_lock.acquire(blocking=False):
            try:
                self._drain(until=request)
            finally:
                self._connection_lock.release()
                self._wake_writer_if_queued()
        else:
            self._wake_writer_if_queued()
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

    def _drain(self, until: _Request | None) -> None:
        """Run queued groups until `until` is done (or, for None, the queue is empty)."""
        while until is None or not until.future.done():
            group = self._take_group()
            if not group:
                return
            try:
                if group[0].in_transaction:
                    self._commit_group(group)
                else:
                    self._run_alone(group[0])
            except BaseException:
                self._recover_interrupted(group)
                raise

    def _recover_interrupted(self, group: list[_Request]) -> None:
        """KeyboardInterrupt landed while this thread ran a group: finish it honestly.

        If the COMMIT went through, the group is acknowledged; otherwise it is rolled back
        and put back at the head of the queue for the writer thread to commit.
        """
        if self._committing and not self._conn.in_transaction:
            _deliver(self._outcomes)
            return
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        with self._wakeup:
            self._queue.extendleft(reversed([r for r in group if not r.future.done()]))

    def _take_group(self) -> list[_Request]:
        with self._wakeup:
            if not self._queue:
                return []
            first = self._queue.popleft()
            group = [first]
            if first.in_transaction:
                while self._queue and self._queue[0].in_transaction and len(group) < MAX_GROUP:
                    group.append(self._queue.popleft())
            return group

    def _run_alone(self, request: _Request) -> None:
        try:
            result = request.work(self._conn)
        except Exception as exc:  # noqa: BLE001 - delivered to the caller
            request.future.set_exception(convert(exc))
        else:
            request.future.set_result(result)

    def _commit_group(self, group: list[_Request]) -> None:
        conn = self._conn
        self._committing = False
        self._outcomes = outcomes = []
        try:
            conn.execute("BEGIN IMMEDIATE")
        except Exception as exc:  # noqa: BLE001
            _fail(group, exc)
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
                if not conn.in_transaction:
                    # SQLite rolled the whole transaction back (I/O error, disk full):
                    # nothing in this group was written, so none of it may be acknowledged.
                    _fail(group, exc)
                    return
                conn.execute("ROLLBACK TO request; RELEASE request" if savepoints else "ROLLBACK")
                outcomes.append((request, None, convert(exc)))
        if conn.in_transaction:
            self._committing = True
            try:
                conn.execute("COMMIT")
            except Exception as exc:  # noqa: BLE001
                self._committing = False
                if conn.in_transaction:
                    conn.execute("ROLLBACK")  # a failed COMMIT can leave the transaction open
                _fail(group, exc)
                return
        _deliver(outcomes)

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


def _fail(group: list[_Request], error: BaseException) -> None:
    for request in group:
        if not request.future.done():
            request.future.set_exception(convert(error))
