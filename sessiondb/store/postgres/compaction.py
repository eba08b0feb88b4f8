"""Compaction leases and committing a compaction, on rows of the profile's schema.

A lease is a row of `compaction_leases`, never a lock held while a summary is written:
appends do not read it. Its fencing token comes from a sequence (larger for every lease
handed out); its watermark is the session's highest message id, read in the transaction
that takes the lease with the session's row locked, so no append can land between the
read and the lease. A lease still within its TTL is taken over only when its holder is
provably dead, judged by the client asking on its own host (store/lease_holders.py): a holder
that ran on this host, in this PID namespace, and is gone. A holder on another host
frees the session when its TTL runs out.

Committing (one transaction, the session locked): the lease is verified (still this
token, not expired, else LeaseLost and nothing written); active rows up to the watermark
become `compacted`; the summary follows them, then every row above the watermark (the
tail appended meanwhile) is moved after it, deleted and inserted again with every column
but its id, so that id order reads summary-then-tail. A summary uid already stored at or
below the watermark is a message kept verbatim: moved into the summary, not archived.
With rotation the summary and tail go to a new child session (relation 'compression')
and the parent ends with reason 'compression'.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import psycopg

from ...errors import CompactionBusy, LeaseLost, MessageConflict
from ...model import COMPRESSION, Lease, Session
from ...inputs import NewMessage, check_kept, child_session, continuation_titles, new_session_id
from .. import lease_holders
from . import lineage, messages, sessions


_LEASE = "session_id, token, watermark, holder, pid, host, ttl, acquired_at, expires_at"
_HOLDER = "host, boot_id, pid_ns, pid, pid_start"  # who holds it (store/lease_holders.py)
_MOVED = ("uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, "
          "finish_reason, token_count, timestamp, display_kind, state")


def _lease(row: Sequence[Any] | None) -> Lease | None:
    if row is None:
        return None
    sid, token, watermark, holder, pid, host, ttl, acquired_at, expires_at = row
    return Lease(session_id=sid, token=token, watermark=watermark, holder=holder, pid=pid, host=host,
                 acquired_at=acquired_at, expires_at=expires_at, ttl=ttl)


def current(conn: psycopg.Connection, session_id: str) -> Lease | None:
    return _lease(conn.execute(f"SELECT {_LEASE} FROM compaction_leases WHERE session_id = %s",
                               (session_id,)).fetchone())


def begin(conn: psycopg.Connection, session_id: str, holder: str | None, ttl: float,
          clock: Callable[[], float]) -> Lease:
    """Take the lease on the session a write to `session_id` lands on (its live tip)."""
    target, _ = lineage.land(conn, session_id)
    now = clock()
    held = current(conn, target)
    if held is not None and held.expires_at > now and not _holder_dead(conn, target):
        who = f"{held.holder or 'a compaction'} (pid {held.pid} on {held.host})"
        raise CompactionBusy(
            f"session {target} is already being compacted by {who}; its lease runs "
            f"{held.expires_at - now:.0f} s more. Appends are not affected; retry the compaction "
            "after it finishes or its lease expires")
    me = lease_holders.this_process()
    row = conn.execute(
        f"INSERT INTO compaction_leases({_LEASE}, boot_id, pid_ns, pid_start) SELECT %(s)s, "
        "nextval('compaction_token'), coalesce((SELECT max(id) FROM messages WHERE session_id = %(s)s), 0), "
        "%(holder)s, %(pid)s, %(host)s, %(ttl)s, %(now)s, %(expires)s, %(boot_id)s, %(pid_ns)s, %(pid_start)s "
        "ON CONFLICT (session_id) DO UPDATE SET token = excluded.token, watermark = excluded.watermark, "
        "holder = excluded.holder, pid = excluded.pid, host = excluded.host, ttl = excluded.ttl, "
        "acquired_at = excluded.acquired_at, expires_at = excluded.expires_at, boot_id = excluded.boot_id, "
        f"pid_ns = excluded.pid_ns, pid_start = excluded.pid_start RETURNING {_LEASE}",
        {"s": target, "holder": holder, "pid": me.pid, "host": me.host, "ttl": ttl, "now": now,
         "expires": now + ttl, "boot_id": me.boot_id, "pid_ns": me.pid_ns, "pid_start": me.pid_start}).fetchone()
    return _lease(row)


def _holder_dead(conn: psycopg.Connection, session_id: str) -> bool:
    """Whether the holder of the session's lease is provably dead, judged on this host."""
    row = conn.execute(f"SELECT {_HOLDER} FROM compaction_leases WHERE session_id = %s", (session_id,)).fetchone()
    return lease_holders.holder_is_provably_dead(dict(zip(_HOLDER.split(", "), row)))


def verify(conn: psycopg.Connection, lease: Lease, now: float) -> Lease:
    """The stored lease if `lease` still holds its session unexpired at `now`; else LeaseLost."""
    stored = current(conn, lease.session_id)
    if stored is None or stored.token != lease.token:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} was released or taken over by another "
            "compaction; nothing was written. Begin a new compaction if one is still needed")
    if stored.expires_at <= now:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} expired {now - stored.expires_at:.0f} s ago; "
            "nothing was written. Refresh a lease before its TTL runs out, or begin a new compaction")
    return stored


def refresh(conn: psycopg.Connection, lease: Lease, ttl: float | None, clock: Callable[[], float]) -> Lease:
    now = clock()
    stored = verify(conn, lease, now)
    ttl = stored.ttl if ttl is None else ttl
    return _lease(conn.execute(
        f"UPDATE compaction_leases SET ttl = %s, expires_at = %s WHERE session_id = %s AND token = %s "
        f"RETURNING {_LEASE}", (ttl, now + ttl, lease.session_id, lease.token)).fetchone())


def release(conn: psycopg.Connection, lease: Lease) -> None:
    conn.execute("DELETE FROM compaction_leases WHERE session_id = %s AND token = %s",
                 (lease.session_id, lease.token))


def commit(conn: psycopg.Connection, lease: Lease, batch: Sequence[NewMessage], mode: str,
           clock: Callable[[], float]) -> Session:
    """Publish the compaction (see the module docstring); returns the live session.

    `clock` is read once, in the transaction: the lease is judged and the rows stamped at
    the same instant."""
    session_id = lease.session_id
    lineage.lock(conn, session_id)
    now = clock()
    watermark = verify(conn, lease, now).watermark
    plan = _plan(conn, session_id, watermark, batch)
    summary_seq = conn.execute("SELECT coalesce((SELECT seq FROM messages WHERE session_id = %s AND id <= %s "
                               "ORDER BY id DESC LIMIT 1), 0)", (session_id, watermark)).fetchone()[0]
    kept_ids = [item for item in plan if isinstance(item, int)]
    kept = {row[0]: row[1:] for row in conn.execute(
        f"DELETE FROM messages WHERE id = ANY(%s) RETURNING id, {_MOVED}", (kept_ids,))}
    tail = conn.execute(f"DELETE FROM messages WHERE session_id = %s AND id > %s RETURNING id, {_MOVED}",
                        (session_id, watermark)).fetchall()
    conn.execute("UPDATE messages SET state = 'compacted' WHERE session_id = %s AND state = 'active' AND id <= %s",
                 (session_id, watermark))
    target = session_id if mode == "in_place" else _rotate(conn, session_id, now)
    rows: list[tuple[Any, ...]] = []
    for item in plan:
        if isinstance(item, int):
            uid, _seq, *rest = kept[item]  # a kept row takes the summary's seq (see sqlite/compaction.py)
            rows.append((target, uid, summary_seq, *rest))
        else:
            rows.append(messages.row(target, item, summary_seq, now))
    rows.extend((target, *r[1:]) for r in sorted(tail))
    messages.insert_rows(conn, rows, conflict=False)
    messages.recount(conn, session_id)
    if target != session_id:
        messages.recount(conn, target)
    release(conn, lease)
    return sessions.get(conn, target)


def _plan(conn: psycopg.Connection, session_id: str, watermark: int, batch: Sequence[NewMessage]) -> list[Any]:
    """The new conversation's head, in order: NewMessage to insert, or the id of a kept row."""
    plan: list[Any] = []
    stored = messages.by_uids(conn, [session_id], [m.uid for m in batch])
    earlier = messages.by_uids(conn, lineage.ancestors(conn, session_id), [m.uid for m in batch])
    for index, m in enumerate(batch):
        found = stored.get(m.uid)
        if found is not None:
            check_kept(index, m, found, session_id)
            if found.id <= watermark:
                plan.append(found.id)  # kept verbatim: moved into the summary, not archived
            continue  # above the watermark: it moves with the tail
        if m.uid in earlier:
            raise MessageConflict(
                f"summary message {index}: uid {m.uid!r} is an archived message of an earlier session "
                "of this conversation; a summary can keep only messages of the session it compacts")
        plan.append(m)
    return plan


def _rotate(conn: psycopg.Connection, parent_id: str, now: float) -> str:
    """Create the parent's compression child (its flags, activity and end carried over) and
    close the parent as rotated; the child's id."""
    parent = sessions.get(conn, parent_id)
    child_id = new_session_id(now)
    while conn.execute("SELECT 1 FROM sessions WHERE id = %s", (child_id,)).fetchone():
        child_id = new_session_id(now)
    sessions.create(conn, child_session(parent, COMPRESSION, id=child_id, title=_next_title(conn, parent.title),
                                        started_at=now))
    conn.execute("UPDATE sessions SET pinned = %s, archived = %s, hidden = %s, last_activity_at = %s, "
                 "ended_at = %s, end_reason = %s WHERE id = %s",
                 (int(parent.pinned), int(parent.archived), int(parent.hidden), parent.last_activity_at,
                  parent.ended_at, parent.end_reason, child_id))
    conn.execute("UPDATE sessions SET ended_at = coalesce(ended_at, %s), end_reason = %s WHERE id = %s",
                 (now, COMPRESSION, parent_id))
    return child_id


def _next_title(conn: psycopg.Connection, title: str | None) -> str | None:
    """'Trip' -> 'Trip #2' -> 'Trip #3': a free title for a continuation, or None."""
    if title is None:
        return None
    candidates = continuation_titles(title)
    taken = {row[0] for row in conn.execute("SELECT title FROM sessions WHERE title = ANY(%s)", (candidates,))}
    return next((c for c in candidates if c not in taken), None)
