"""Compaction on every backend: the lease that fences it, and committing it.

A lease is a row of `compaction_leases`, never a lock held while a summary is written:
appends do not read it, so a summary call that takes minutes holds up nothing but a
second compaction of the same session (S-02). It is taken on the session a write to the
named one lands on (its live tip, store/lineage.py), with that session's row locked, and
carries a fencing token (larger for every lease the store hands out) and the watermark:
the highest message id the session held when it was taken, read with the row locked so
that no append lands between the read and the lease. A lease still within its TTL is
taken over only on proof that its holder is dead (S-07, store/lease_holders.py); anything
short of it waits for the TTL.

Committing is one write (S-03):

1. The lease is verified first: still this lease, not expired. Otherwise LeaseLost and
   nothing is written.
2. The session's active rows up to the watermark become `compacted` (kept, searchable,
   shown with include_compacted).
3. The summary is inserted, then every row above the watermark (appended while the
   summary was being written, in any state) follows it: deleted and inserted again, so
   that id order reads summary-then-tail, with every column but the id as it was.
   In place this happens inside the session; with rotation it happens into a new child
   session (relation 'compression') and the parent ends with reason 'compression'. A row
   is moved, never copied: every message exists exactly once in the lineage (S-06).

A summary message whose uid is already stored in the session is a message the
compaction keeps verbatim: it is moved to its place in the summary, not archived and not
stored twice. If it sits above the watermark it simply stays in the tail.

Summary rows, kept ones too, take the seq of the newest message at or below the watermark
(the last one they stand for), so later appends keep numbering from where the conversation
was: an append numbers its row one past the session's last row, and a kept message that
ends the summary with the lower seq it had would send the numbering back. A
compaction never moves the session's last_activity_at (S-08); a rotated child inherits
its parent's.

Each function is a unit of work over `Rows` and takes the clock of the handle that asked,
read inside the transaction: handles on one store share its rows but not a clock.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..errors import CompactionBusy, LeaseLost, MessageConflict
from ..inputs import NewMessage, check_kept, child_session, continuation_titles, new_session_id
from ..model import COMPRESSION, Lease, Session
from . import lease_holders, lineage, sessions
from .rows import Row, Rows, above, at_most, one_of

_LEASE = ("session_id", "token", "watermark", "holder", "pid", "host", "ttl", "acquired_at", "expires_at")
#: Every column of a message row but its id and session: what a moved row keeps.
_MOVED = ("uid", "seq", "role", "content", "parts", "tool_calls", "tool_call_id", "tool_name", "reasoning",
          "finish_reason", "token_count", "timestamp", "display_kind", "state")


def _lease(row: Row) -> Lease:
    return Lease(**{name: row[name] for name in _LEASE})


def _held(rows: Rows, session_id: str, *, lock: bool = False) -> Row | None:
    found = rows.select("compaction_leases", {"session_id": session_id}, lock=lock)
    return found[0] if found else None


def current(rows: Rows, session_id: str) -> Lease | None:
    held = _held(rows, session_id)
    return None if held is None else _lease(held)


def begin(rows: Rows, session_id: str, holder: str | None, ttl: float, clock: Callable[[], float]) -> Lease:
    """Take the lease on the session a write to `session_id` lands on (its live tip),
    reclaiming an expired one or one whose holder is dead."""
    target, _ = lineage.land(rows, session_id)
    now = clock()
    held = _held(rows, target)
    if held is not None:
        if held["expires_at"] > now and not lease_holders.holder_is_provably_dead(held):
            who = f"{held['holder'] or 'a compaction'} (pid {held['pid']} on {held['host']})"
            raise CompactionBusy(
                f"session {target} is already being compacted by {who}; its lease runs "
                f"{held['expires_at'] - now:.0f} s more. Appends are not affected; retry the "
                "compaction after it finishes or its lease expires")
        rows.delete("compaction_leases", {"session_id": target})
    newest = rows.select("messages", {"session_id": target}, columns=("id",), order=("-id",), limit=1)
    me = lease_holders.this_process()
    row = {"session_id": target, "token": rows.next_token(), "watermark": newest[0]["id"] if newest else 0,
           "holder": holder, "pid": me.pid, "host": me.host, "boot_id": me.boot_id, "pid_ns": me.pid_ns,
           "pid_start": me.pid_start, "ttl": ttl, "acquired_at": now, "expires_at": now + ttl}
    rows.insert("compaction_leases", [row])
    return _lease(row)


def verify(rows: Rows, lease: Lease, now: float) -> Row:
    """The lease's stored row, locked, if `lease` still holds the session and is unexpired
    at `now`; else LeaseLost."""
    row = _held(rows, lease.session_id, lock=True)
    if row is None or row["token"] != lease.token:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} was released or taken over by "
            "another compaction; nothing was written. Begin a new compaction if one is still needed")
    if row["expires_at"] <= now:
        raise LeaseLost(
            f"the compaction lease on session {lease.session_id} expired {now - row['expires_at']:.0f} s "
            "ago; nothing was written. Refresh a lease before its TTL runs out, or begin a new compaction")
    return row


def refresh(rows: Rows, lease: Lease, ttl: float | None, clock: Callable[[], float]) -> Lease:
    now = clock()
    row = verify(rows, lease, now)
    ttl = row["ttl"] if ttl is None else ttl
    row.update(ttl=ttl, expires_at=now + ttl)
    rows.update("compaction_leases", {"session_id": lease.session_id, "token": lease.token},
                set={"ttl": ttl, "expires_at": row["expires_at"]})
    return _lease(row)


def release(rows: Rows, lease: Lease) -> None:
    """Drop the lease if it is still this one."""
    rows.delete("compaction_leases", {"session_id": lease.session_id, "token": lease.token})


def commit(rows: Rows, lease: Lease, batch: Sequence[NewMessage], mode: str, clock: Callable[[], float]) -> Session:
    """Publish the compaction (see the module docstring); returns the live session.

    `clock` is read once, in the transaction: the lease is judged, and the summary and a
    rotation stamped, at the same instant.
    """
    session_id = lease.session_id
    # The session's row first, as every write to it locks it: a late write waits for the rotation.
    rows.select("sessions", {"id": session_id}, columns=("id",), lock=True)
    now = clock()
    watermark = verify(rows, lease, now)["watermark"]
    plan = _plan(rows, session_id, watermark, batch)
    kept_ids = [item for item in plan if isinstance(item, int)]

    last = rows.select("messages", {"session_id": session_id, "id": at_most(watermark)}, columns=("seq",),
                       order=("-id",), limit=1)
    summary_seq = last[0]["seq"] if last else 0
    kept = {r["id"]: r for r in rows.select("messages", {"id": one_of(kept_ids)})} if kept_ids else {}
    tail = rows.select("messages", {"session_id": session_id, "id": above(watermark)}, columns=_MOVED,
                       order=("id",))
    if kept_ids:
        rows.delete("messages", {"id": one_of(kept_ids)})
    if tail:
        rows.delete("messages", {"session_id": session_id, "id": above(watermark)})
    rows.update("messages", {"session_id": session_id, "state": "active", "id": at_most(watermark)},
                set={"state": "compacted"})

    target = session_id if mode == "in_place" else _rotate(rows, session_id, now)
    moved: list[Row] = []
    for item in plan:
        if isinstance(item, int):
            moved.append({**{c: kept[item][c] for c in _MOVED}, "session_id": target, "seq": summary_seq})
        else:
            moved.append(lineage.new_row(target, item, summary_seq, now))
    moved.extend({**r, "session_id": target} for r in tail)
    lineage.insert_messages(rows, moved)

    lineage.recount(rows, session_id)
    if target != session_id:
        lineage.recount(rows, target)
    release(rows, lease)
    return sessions.get(rows, target)


def _plan(rows: Rows, session_id: str, watermark: int, batch: Sequence[NewMessage]) -> list[Any]:
    """The new conversation's head, in order: NewMessage to insert, or the id of a kept row."""
    uids = [m.uid for m in batch]
    stored = lineage.by_uids(rows, [session_id], uids)
    earlier = lineage.by_uids(rows, lineage.ancestors(rows, session_id), uids)
    plan: list[Any] = []
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


def _rotate(rows: Rows, parent_id: str, now: float) -> str:
    """Create the parent's compression child and close the parent as rotated; the child's id."""
    parent = sessions.get(rows, parent_id)
    child_id = new_session_id(now)
    while rows.select("sessions", {"id": child_id}, columns=("id",)):
        child_id = new_session_id(now)
    sessions.create(rows, child_session(parent, COMPRESSION, id=child_id, title=_next_title(rows, parent.title),
                                        started_at=now))
    # The child is the same conversation: its flags, its activity clock and (if the
    # parent had ended) its end carry over; the parent closes as rotated.
    rows.update("sessions", {"id": child_id}, set={
        "pinned": int(parent.pinned), "archived": int(parent.archived), "hidden": int(parent.hidden),
        "last_activity_at": parent.last_activity_at, "ended_at": parent.ended_at, "end_reason": parent.end_reason})
    rows.update("sessions", {"id": parent_id}, set={
        "ended_at": now if parent.ended_at is None else parent.ended_at, "end_reason": COMPRESSION})
    return child_id


def _next_title(rows: Rows, title: str | None) -> str | None:
    """'Trip' -> 'Trip #2' -> 'Trip #3': a free title for a continuation, or None."""
    if title is None:
        return None
    candidates = continuation_titles(title)
    taken = {r["title"] for r in rows.select("sessions", {"title": one_of(candidates)}, columns=("title",))}
    return next((c for c in candidates if c not in taken), None)
