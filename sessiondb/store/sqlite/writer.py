"""The one writer of a database file in this process, with group commit.

A writer is a thread that owns the only writable connection to its file. Callers submit a
unit of work (a function of the connection) and get a Future that completes once the work
is committed. Requests that arrive while a commit is in progress are committed together in
the next transaction, each inside its own savepoint, so one failing request does not abort
the others and one fsync serves them all.

Work runs on the writer thread, so a caller that is cancelled or interrupted while waiting
does not cancel a write it already submitted: the write completes and is durable either way.
"""

from __future__ import annotations

import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

import apsw

from ...errors import StoreClosed
from .errors import convert

T = TypeVar("T")
Work = Callable[[apsw.Connection], T]

MAX_GROUP = 512  # requests per transaction; bounds the time a group holds the lock


@dataclass
class _Request:
    work: Work[Any]
    future: Future = field(default_factory=Future)
    in_transaction: bool = True


class Writer:
    """Owns one writable connection on its own thread; see the module docstring."""

    def __init__(self, opener: Callable[[], apsw.Connection], name: str) -> None:
        self._opener = opener
        self._queue: deque[_Request] = deque()
        self._wakeup = threading.Condition()
        self._stopping = False
        self._conn: apsw.Connection | None = None
        ready: Future = Future()
        self._thread = threading.Thread(target=self._run, args=(ready,), name=name, daemon=True)
        self._thread.start()
        ready.result()  # re-raises whatever opening the connection raised

    def submit(self, work: Work[T], *, in_transaction: bool = True) -> Future:
        """Queue `work`; the Future resolves to its result once committed."""
        request = _Request(work, in_transaction=in_transaction)
        with self._wakeup:
            if self._stopping:
                raise StoreClosed("the store's writer has stopped; open the store again")
            self._queue.append(request)
            self._wakeup.notify()
        return request.future

    def run(self, work: Work[T], *, in_transaction: bool = True) -> T:
        """Submit `work` and wait for its acknowledgement."""
        return self.submit(work, in_transaction=in_transaction).result()

    def stop(self) -> None:
        """Commit everything already submitted, then close the connection."""
        with self._wakeup:
            self._stopping = True
            self._wakeup.notify()
        if self._thread is not threading.current_thread():
            self._thread.join()

    # --- the writer thread -------------------------------------------------------------

    def _run(self, ready: Future) -> None:
        try:
            self._conn = self._opener()
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that opened us
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while True:
                group = self._next_group()
                if group is None:
                    return
                if group[0].in_transaction:
                    self._commit_group(group)
                else:
                    self._run_alone(group[0])
        finally:
            self._conn.close()

    def _next_group(self) -> list[_Request] | None:
        """Wait for work; take every queued transactional request (or one control request)."""
        with self._wakeup:
            while not self._queue:
                if self._stopping:
                    return None
                self._wakeup.wait()
            first = self._queue.popleft()
            group = [first]
            if first.in_transaction:
                while self._queue and self._queue[0].in_transaction and len(group) < MAX_GROUP:
                    group.append(self._queue.popleft())
            return group

    def _run_alone(self, request: _Request) -> None:
        try:
            request.future.set_result(request.work(self._conn))
        except BaseException as exc:  # noqa: BLE001 - delivered to the caller
            request.future.set_exception(convert(exc))

    def _commit_group(self, group: list[_Request]) -> None:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except BaseException as exc:  # noqa: BLE001
            _fail(group, exc)
            return
        outcomes: list[tuple[_Request, Any, BaseException | None]] = []
        for request in group:
            try:
                conn.execute("SAVEPOINT request")
                result = request.work(conn)
                conn.execute("RELEASE request")
                outcomes.append((request, result, None))
            except BaseException as exc:  # noqa: BLE001
                if not conn.in_transaction:
                    # SQLite rolled the whole transaction back (I/O error, disk full):
                    # nothing in this group was written, so none of it may be acknowledged.
                    _fail(group, exc)
                    return
                conn.execute("ROLLBACK TO request; RELEASE request")
                outcomes.append((request, None, convert(exc)))
        try:
            conn.execute("COMMIT")
        except BaseException as exc:  # noqa: BLE001
            if conn.in_transaction:
                conn.execute("ROLLBACK")  # a failed COMMIT can leave the transaction open
            _fail(group, exc)
            return
        for request, result, error in outcomes:
            if error is None:
                request.future.set_result(result)
            else:
                request.future.set_exception(error)


def _fail(group: list[_Request], error: BaseException) -> None:
    for request in group:
        if not request.future.done():
            request.future.set_exception(convert(error))
