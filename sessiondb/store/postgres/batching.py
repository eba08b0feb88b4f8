"""Appends from concurrent callers of one process, committed together.

Each commit waits for the server to flush its WAL, and that wait, not the work, is most
of an append's cost. So concurrent appends through one backend handle share transactions:
the first caller to arrive leads, taking every waiting append (up to MAX_BATCH) into one
transaction, each in its own savepoint so that one append's refusal (a uid conflict, a
missing session) rolls back only that append; when its own append is done it hands the
lead to the next waiting caller. A caller alone pays one statement (messages.append_fresh,
committed as it returns) when its batch is the common case, else one transaction. What an
append does is store/lineage.py's unit of work, handed in with its command.

The appends of a batch run in arrival order, so one caller's appends keep their order,
and the whole batch is one unit of work: if the connection breaks, it all runs again
(appends are idempotent by uid). An append is acknowledged only after its batch commits.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import psycopg

from ... import telemetry
from ...errors import SessionDBError
from ...model import Message
from .. import commands as cmd
from ..rows import Rows

MAX_BATCH = 64  # appends one transaction takes at most


Work = Callable[[Rows], list[Message]]


class _Pending:
    __slots__ = ("command", "work", "wake", "lead", "result", "error")

    def __init__(self, command: cmd.Append, work: Work) -> None:
        self.command = command
        self.work = work
        self.wake = threading.Event()
        self.lead = False
        self.result: list[Message] | None = None
        self.error: BaseException | None = None

    def outcome(self) -> list[Message]:
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class AppendBatcher:
    """Leader/follower batching of appends onto `run` (a transaction, connect.Database.run)
    and `direct` (one statement outside a transaction, connect.Database.session); `rows`
    is a transaction's connection as the Rows an append's work runs on, and `fresh` the
    common append's one statement (messages.append_fresh, its schema given)."""

    def __init__(self, run: Callable[..., Any], direct: Callable[..., Any],
                 rows: Callable[[psycopg.Connection], Rows], fresh: Callable[..., list[Message] | None]) -> None:
        self._run = run
        self._direct = direct
        self._rows = rows
        self._fresh = fresh
        self._lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._leading = False

    def append(self, command: cmd.Append, work: Work) -> list[Message]:
        """Store `command` by `work` (its append as a unit of work), or in one statement."""
        me = _Pending(command, work)
        with self._lock:
            self._queue.append(me)
            lead, self._leading = not self._leading, True
        if not lead:
            me.wake.wait()
            if not me.lead:
                return me.outcome()
        while True:  # leading: commit batches until one held this caller's append
            with self._lock:
                batch, self._queue[:MAX_BATCH] = self._queue[:MAX_BATCH], []
            self._commit(batch)
            if me in batch:
                break
        with self._lock:
            if self._queue:
                self._queue[0].lead = True
                self._queue[0].wake.set()
            else:
                self._leading = False
        return me.outcome()

    def _commit(self, batch: list[_Pending]) -> None:
        if telemetry.recording:
            telemetry.committed_together(len(batch), "postgresql")
        try:
            if len(batch) == 1:
                command, work = batch[0].command, batch[0].work
                fresh = self._direct(lambda conn: self._fresh(conn, command.session_id, command.batch, command.now))
                batch[0].result = fresh if fresh is not None else self._run(lambda conn: work(self._rows(conn)))
            else:
                outcomes = self._run(lambda conn: [self._in_savepoint(conn, p.work) for p in batch])
                for pending, (result, error) in zip(batch, outcomes):
                    pending.result, pending.error = result, error
        except BaseException as exc:  # the batch's transaction failed: every append in it did
            for pending in batch:
                pending.error = exc
        for pending in batch:
            pending.lead = False
            pending.wake.set()

    def _in_savepoint(self, conn: psycopg.Connection, work: Work) -> tuple[list[Message] | None, BaseException | None]:
        try:
            with conn.transaction():
                return work(self._rows(conn)), None
        except SessionDBError as refused:  # this append only; the savepoint took back what it wrote
            return None, refused
