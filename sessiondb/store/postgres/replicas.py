"""Searches, recalls and listings from read replicas, never behind the handle's own writes.

A store on a server can name streaming replicas of it (`open_store(url, replicas=[...])`):
a replica takes the reads that cost the primary most and change nothing, and it answers
one only once it has replayed everything this handle acknowledged. The rule:

- A write this handle acknowledged marks the handle (`wrote`). The next replica read first
  asks the primary for its current WAL insert position, which is at or past the commit
  record of every transaction acknowledged so far, and keeps it (`needed`); reads then
  compare against it until the handle writes again. The mark is cleared before the
  position is read, so a write acknowledged meanwhile marks it again.
- A replica answers when `pg_last_wal_replay_lsn()` has reached the position. It is asked
  again every few milliseconds for at most REPLAY_WAIT; then, or when the replica cannot
  be reached or cancels the read (a conflict with its recovery), the primary answers. A
  replica that failed is passed over for RETRY_AFTER seconds, so a replica that is down
  costs one read a connection attempt, not every read. A replica that is not in recovery
  (a URL naming a primary) has nothing to replay.
- The check comes before the read's own transaction, whose snapshot is taken after it:
  what was replayed by the check is in the snapshot (replay only moves forward).

What it does not promise: another process's writes, acknowledged to that process, may not
have reached a replica yet. A handle reads its own writes; a caller that must see another
process's newest writes reads from a store opened without replicas. Writes, and the reads
inside a write's unit of work, never go to a replica.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Sequence, TypeVar

import psycopg

from ... import telemetry
from ...errors import InvalidInput, SessionDBError
from .connect import Database

T = TypeVar("T")

#: The longest a read waits for a replica to replay the handle's writes before the primary answers.
REPLAY_WAIT = 0.5
#: How often a replica is asked how far it has replayed, while a read waits for it.
_POLL = 0.005
#: Seconds a replica that failed a read is passed over.
RETRY_AFTER = 5.0
#: A replica's connections: a read's patience is its own (the primary is the fallback).
_PATIENCE, _POOL_SIZE = 1.0, 4


class Replicas:
    """The replicas of one handle's store, tried in turn, and its read-your-writes mark."""

    def __init__(self, urls: Sequence[str], *, schema: str, primary: Database) -> None:
        if isinstance(urls, str) or not all(isinstance(u, str) and u for u in urls):
            raise InvalidInput("replicas must be a list of postgresql:// URLs")
        self._primary = primary
        self._servers = [Database(url, schema=schema, profile=None, patience=_PATIENCE, pool_size=_POOL_SIZE,
                                  synchronous_commit="off") for url in urls]
        self._passed_over = [0.0] * len(self._servers)
        self._next = 0
        self._lock = threading.Lock()
        self._wrote = False
        self._needed: str | None = None  # the primary's WAL position this handle's reads wait for

    def open(self) -> None:
        for server in self._servers:
            server.open()

    def close(self) -> None:
        for server in self._servers:
            server.close()

    def wrote(self) -> None:
        """A write of this handle was acknowledged."""
        self._wrote = True

    def read(self, work: Callable[[psycopg.Connection], T]) -> T:
        """`work` in one read-only snapshot of a replica that has replayed this handle's
        writes, else of the primary."""
        needed = self._position()
        for index in self._order():
            server = self._servers[index]
            try:
                if server.session(lambda conn: _replayed(conn, needed)):
                    found = server.run(work, read_only=True)
                    telemetry.read_served("postgresql", "replica")
                    return found
            except SessionDBError:
                self._passed_over[index] = time.monotonic() + RETRY_AFTER
        telemetry.read_served("postgresql", "primary")
        return self._primary.run(work, read_only=True)

    def _position(self) -> str | None:
        with self._lock:
            if self._wrote:
                self._wrote = False  # before the position: a write acknowledged meanwhile marks it again
                self._needed = self._primary.run(
                    lambda conn: conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0],
                    read_only=True)
            return self._needed

    def _order(self) -> list[int]:
        """The replicas not passed over, starting at the next in turn."""
        now = time.monotonic()
        with self._lock:
            start, self._next = self._next, (self._next + 1) % len(self._servers)
        count = len(self._servers)
        return [i for i in ((start + k) % count for k in range(count)) if self._passed_over[i] <= now]


def _replayed(conn: psycopg.Connection, needed: str | None) -> bool:
    """Whether the replica on `conn` has replayed up to `needed`, waiting REPLAY_WAIT at most."""
    if needed is None:
        return True
    deadline = time.monotonic() + REPLAY_WAIT
    while True:
        caught_up = conn.execute("SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, NOT pg_is_in_recovery())",
                                 (needed,)).fetchone()[0]
        if caught_up or time.monotonic() >= deadline:
            return bool(caught_up)
        time.sleep(_POLL)
