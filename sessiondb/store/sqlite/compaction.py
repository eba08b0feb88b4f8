"""Committing a compaction: archive up to the watermark, publish the summary, move the tail.

One write unit, in the writer's transaction (S-03):

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
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import apsw

from ...errors import MessageConflict
from ...model import COMPRESSION, Lease, Session
from ...inputs import NewMessage, check_kept, child_session, continuation_titles, new_session_id
from . import leases, lineage, messages, sessions


# Every column of a message row but its id, in insert order.
_MOVED = (
    "uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, token_count, timestamp, display_kind, state"
)
_INSERT = f"INSERT INTO messages(session_id, {_MOVED}) VALUES (?, {', '.join('?' * 14)})"


def begin(conn: apsw.Connection, session_id: str, holder: str | None, ttl: float,
          clock: Callable[[], float]) -> Lease:
    """Take the lease on the session a write to `session_id` lands on (its live tip)."""
    return leases.begin(conn, lineage.land(conn, session_id)[0], holder, ttl, clock)


def commit(conn: apsw.Connection, lease: Lease, batch: Sequence[NewMessage], mode: str,
           clock: Callable[[], float]) -> Session:
    """Publish the compaction (see the module docstring); returns the live session.

    `clock` is read once, in the transaction: the lease is judged, and the summary and a
    rotation stamped, at the same instant.
    """
    now = clock()
    row = leases.verify(conn, lease, now)
    session_id, watermark = lease.session_id, row["watermark"]
    plan = _plan(conn, session_id, watermark, batch)
    kept_ids = [item for item in plan if isinstance(item, int)]

    last = conn.execute(
        "SELECT seq FROM messages WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1",
        (session_id, watermark),
    ).fetchone()
    summary_seq = last[0] if last else 0
    kept = {mid: _row(conn, mid) for mid in kept_ids}
    tail = conn.execute(
        f"SELECT {_MOVED} FROM messages WHERE session_id = ? AND id > ? ORDER BY id", (session_id, watermark)
    ).fetchall()

    for mid in kept_ids:
        conn.execute("DELETE FROM messages WHERE id = ?", (mid,))
    if tail:
        conn.execute("DELETE FROM messages WHERE session_id = ? AND id > ?", (session_id, watermark))
    conn.execute(
        "UPDATE messages SET state = 'compacted' WHERE session_id = ? AND state = 'active' AND id <= ?",
        (session_id, watermark),
    )

    target = session_id if mode == "in_place" else _rotate(conn, session_id, now)
    rows: list[tuple[Any, ...]] = []
    for item in plan:
        if isinstance(item, int):
            uid, _seq, *rest = kept[item]
            rows.append((target, uid, summary_seq, *rest))
        else:
            m = item
            rows.append((target, m.uid, summary_seq, m.role, m.content, m.parts, m.tool_calls, m.tool_call_id,
                         m.tool_name, m.reasoning, m.finish_reason, m.token_count,
                         now if m.timestamp is None else m.timestamp, m.display_kind, m.state))
    rows.extend((target, *r) for r in tail)
    conn.executemany(_INSERT, rows)

    lineage.recount(conn, session_id)
    if target != session_id:
        lineage.recount(conn, target)
    leases.release(conn, lease)
    return sessions.get(conn, target)


def _plan(conn: apsw.Connection, session_id: str, watermark: int, batch: Sequence[NewMessage]) -> list[Any]:
    """The new conversation's head, in order: NewMessage to insert, or the id of a kept row."""
    plan: list[Any] = []
    earlier = lineage.ancestors(conn, session_id)
    for index, m in enumerate(batch):
        stored = conn.execute(
            f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = ? AND uid = ?", (session_id, m.uid)
        ).fetchone()
        if stored is not None:
            message = messages.from_row(stored)
            check_kept(index, m, message, session_id)
            if message.id <= watermark:
                plan.append(message.id)  # kept verbatim: moved into the summary, not archived
            continue  # above the watermark: it moves with the tail
        if lineage.find_uid(conn, earlier, m.uid) is not None:
            raise MessageConflict(
                f"summary message {index}: uid {m.uid!r} is an archived message of an earlier session "
                "of this conversation; a summary can keep only messages of the session it compacts"
            )
        plan.append(m)
    return plan


def _row(conn: apsw.Connection, message_id: int) -> tuple[Any, ...]:
    return conn.execute(f"SELECT {_MOVED} FROM messages WHERE id = ?", (message_id,)).fetchone()


def _rotate(conn: apsw.Connection, parent_id: str, now: float) -> str:
    """Create the parent's compression child and close the parent; the child's id."""
    parent = sessions.get(conn, parent_id)
    child_id = new_session_id(now)
    while conn.execute("SELECT 1 FROM sessions WHERE id = ?", (child_id,)).fetchone():
        child_id = new_session_id(now)
    sessions.create(conn, child_session(parent, COMPRESSION, id=child_id, title=_next_title(conn, parent.title),
                                        started_at=now))
    # The child is the same conversation: its flags, its activity clock and (if the
    # parent had ended) its end carry over; the parent closes as rotated.
    conn.execute(
        "UPDATE sessions SET pinned = ?, archived = ?, hidden = ?, last_activity_at = ?, "
        "ended_at = ?, end_reason = ? WHERE id = ?",
        (int(parent.pinned), int(parent.archived), int(parent.hidden), parent.last_activity_at,
         parent.ended_at, parent.end_reason, child_id),
    )
    conn.execute(
        "UPDATE sessions SET ended_at = coalesce(ended_at, ?), end_reason = ? WHERE id = ?",
        (now, COMPRESSION, parent_id),
    )
    return child_id


def _next_title(conn: apsw.Connection, title: str | None) -> str | None:
    """'Trip' -> 'Trip #2' -> 'Trip #3': a free title for a continuation, or None."""
    if title is None:
        return None
    for candidate in continuation_titles(title):
        if not conn.execute("SELECT 1 FROM sessions WHERE title = ?", (candidate,)).fetchone():
            return candidate
    return None
