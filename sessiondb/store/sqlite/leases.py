"""Compaction leases: who may compact a session, fenced, expiring, and reclaimable from the dead.

A lease is a row in `compaction_leases`, never a database lock: appends do not read it,
so a summary call that takes minutes holds up nothing but a second compaction of the
same session (S-02). Each lease carries a fencing token, larger for every lease the store
hands out, and the watermark: the highest message id the session held when it was taken,
read inside the write transaction that takes it.

Taking over a lease that is still within its TTL needs proof that its holder is dead
(S-07): the holder ran on this kernel (same hostname and boot id) in this PID namespace,
and its PID is gone, is a zombie, or now belongs to a process that started at another
time. Anything short of proof (another host or container, a PID that is alive, a thread
of this very process, /proc unreadable) waits for the TTL.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable

import apsw

from ...errors import CompactionBusy, LeaseLost
from ...model import Lease
from . import sessions

_LEASE_COLUMNS = (
    "session_id, token, watermark, holder, pid, host, boot_id, pid_ns, pid_start, thread_id, "
    "ttl, acquired_at, expires_at"
)


# --- who we are, and whether a recorded holder is provably dead ------------------------


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    host: str
    boot_id: str | None
    pid_ns: str | None
    pid_start: int | None  # clock ticks after boot: exact, unlike a wall-clock start time


_identity_cache: dict[int, ProcessIdentity] = {}


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    ident = _identity_cache.get(pid)  # keyed by pid: a forked child is a new holder
    if ident is None:
        ident = ProcessIdentity(
            pid=pid,
            host=socket.gethostname(),
            boot_id=_read_text("/proc/sys/kernel/random/boot_id"),
            pid_ns=_readlink("/proc/self/ns/pid"),
            pid_start=_start_ticks(pid),
        )
        _identity_cache[pid] = ident
    return ident


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or None
    except (OSError, ValueError):
        return None


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of `pid`, or None if it does not exist.

    Raises OSError when the process may exist but cannot be inspected.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[0], int(fields[19])  # field 3 is the state, field 22 the start time


def _start_ticks(pid: int) -> int | None:
    try:
        stat = _proc_stat(pid)
    except (OSError, ValueError, IndexError):
        return None
    return None if stat is None else stat[1]


def holder_is_provably_dead(row: dict[str, Any], me: ProcessIdentity | None = None) -> bool:
    """Whether the process that took this lease is certainly gone (S-07).

    False means "not proven", never "alive": the lease then waits for its TTL.
    """
    me = me or this_process()
    same_kernel = (
        row["host"] == me.host
        and row["boot_id"] is not None and row["boot_id"] == me.boot_id
        and row["pid_ns"] is not None and row["pid_ns"] == me.pid_ns
    )
    if not same_kernel:
        return False
    if row["pid"] == me.pid:
        # This process (another thread of it is alive), unless the PID was reused by us.
        return row["pid_start"] is not None and me.pid_start is not None and row["pid_start"] != me.pid_start
    try:
        stat = _proc_stat(row["pid"])
    except (OSError, ValueError, IndexError):
        return False
    if stat is None:
        return True  # no such process in our PID namespace
    state, start = stat
    if state in ("Z", "X"):
        return True  # exited, not yet reaped: it can do nothing more
    return row["pid_start"] is not None and start != row["pid_start"]  # the PID was reused


# --- the lease operations (each runs inside the writer's transaction) -------------------
#
# Each takes the clock of the handle that asked (seconds since the epoch) and reads it
# inside the transaction: handles on one file share a writer but not a clock.


def _row(conn: apsw.Connection, session_id: str) -> dict[str, Any] | None:
    cursor = conn.execute(f"SELECT {_LEASE_COLUMNS} FROM compaction_leases WHERE session_id = ?", (session_id,))
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip((c.strip() for c in _LEASE_COLUMNS.split(",")), row))


def _to_lease(row: dict[str, Any]) -> Lease:
    return Lease(
        session_id=row["session_id"], token=row["token"], watermark=row["watermark"],
        holder=row["holder"], pid=row["pid"], host=row["host"], acquired_at=row["acquired_at"],
        expires_at=row["expires_at"], ttl=row["ttl"],
    )


def _next_token(conn: apsw.Connection) -> int:
    return int(
        conn.execute(
            "UPDATE store_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
            "WHERE key = 'compaction_token' RETURNING value"
        ).fetchone()[0]
    )


def begin(conn: apsw.Connection, session_id: str, holder: str | None, ttl: float,
          clock: Callable[[], float]) -> Lease:
    """Take the session's lease, reclaiming an expired one or one whose holder is dead."""
    sessions.require(conn, session_id)
    now = clock()
    current = _row(conn, session_id)
    if current is not None:
        if current["expires_at"] > now and not holder_is_provably_dead(current):
            who = f"{current['holder'] or 'a compaction'} (pid {current['pid']} on {current['host']})"
            raise CompactionBusy(
                f"session {session_id} is already being compacted by {who}; its lease runs "
                f"{current['expires_at'] - now:.0f} s more. Appends are not affected; retry the "
                "compaction after it finishes or its lease expires"
            )
        conn.execute("DELETE FROM compaction_leases WHERE session_id = ?", (session_id,))
    watermark = conn.execute(
        "SELECT coalesce(max(id), 0) FROM messages WHERE session_id = ?", (session_id,)
    ).fetchone()[0]
    me = this_process()
    row = {
        "session_id": session_id, "token": _next_token(conn), "watermark": watermark,
        "holder": holder, "pid": me.pid, "host": me.host, "boot_id": me.boot_id,
        "pid_ns": me.pid_ns, "pid_start": me.pid_start, "thread_id": threading.get_ident(),
        "ttl": ttl, "acquired_at": now, "expires_at": now + ttl,
    }
    conn.execute(
        f"INSERT INTO compaction_leases({_LEASE_COLUMNS}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    return _to_lease(row)


def verify(conn: apsw.Connection, lease: Lease, now: float) -> dict[str, Any]:
    """The lease's stored row if `lease` still holds the session and is unexpired at `now`; else LeaseLost."""
    row = _row(conn, lease.session_id)
    if row is None or row["token"] != lease.token:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} was released or taken over by "
            "another compaction; nothing was written. Begin a new compaction if one is still needed"
        )
    if row["expires_at"] <= now:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} expired {now - row['expires_at']:.0f} s "
            "ago; nothing was written. Refresh a lease before its TTL runs out, or begin a new compaction"
        )
    return row


def refresh(conn: apsw.Connection, lease: Lease, ttl: float | None, clock: Callable[[], float]) -> Lease:
    now = clock()
    row = verify(conn, lease, now)
    ttl = row["ttl"] if ttl is None else ttl
    row["ttl"], row["expires_at"] = ttl, now + ttl
    conn.execute(
        "UPDATE compaction_leases SET ttl = ?, expires_at = ? WHERE session_id = ? AND token = ?",
        (ttl, row["expires_at"], lease.session_id, lease.token),
    )
    return _to_lease(row)


def release(conn: apsw.Connection, lease: Lease) -> bool:
    """Drop the lease if it is still this one; whether it was."""
    conn.execute(
        "DELETE FROM compaction_leases WHERE session_id = ? AND token = ?", (lease.session_id, lease.token)
    )
    return conn.changes() > 0


def current(conn: apsw.Connection, session_id: str) -> Lease | None:
    row = _row(conn, session_id)
    return None if row is None else _to_lease(row)
