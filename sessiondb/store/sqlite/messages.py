"""Message rows: idempotent appends and transcript reads.

An append is one batch: it runs inside one savepoint of the writer's transaction, so a
batch that fails part-way (a uid conflict, a missing session) leaves no row behind.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import apsw

from ...errors import MessageConflict, NotFound
from ...model import ACTIVITY_ROLES, INTERNAL_NOTIFICATION, Message, MessageState
from ...inputs import NewMessage
from . import sessions

COLUMNS = (
    "id, session_id, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, "
    "reasoning, finish_reason, token_count, timestamp, display_kind, state"
)
_INSERT = (
    "INSERT INTO messages(session_id, uid, seq, role, content, parts, tool_calls, tool_call_id, "
    "tool_name, reasoning, finish_reason, token_count, timestamp, display_kind, state) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(session_id, uid) DO NOTHING"
)  # no RETURNING: it builds a temporary b-tree per statement; changes() and the rowid tell


def from_row(row: tuple[Any, ...]) -> Message:
    (mid, sid, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name,
     reasoning, finish_reason, token_count, timestamp, display_kind, state) = row
    return Message(
        id=mid, session_id=sid, uid=uid, seq=seq, role=role,
        content=json.loads(parts) if parts is not None else content,
        tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
        tool_call_id=tool_call_id, tool_name=tool_name, reasoning=reasoning,
        finish_reason=finish_reason, token_count=token_count, timestamp=timestamp,
        display_kind=display_kind, state=state,
    )


def append(conn: apsw.Connection, session_id: str, batch: Sequence[NewMessage], now: float,
           last_seq: int | None = None) -> list[Message]:
    """Store the messages not already stored; return the stored row for each, in order.
    `last_seq`: the session's last seq, when the caller has just read it with the session."""
    if last_seq is None:
        # One query both proves the session exists and finds the last seq.
        found = conn.execute(
            "SELECT (SELECT seq FROM messages WHERE session_id = ?1 ORDER BY id DESC LIMIT 1) "
            "FROM sessions WHERE id = ?1",
            (session_id,),
        ).fetchone()
        if found is None:
            raise NotFound(f"no session {session_id!r} in this store")
        last_seq = found[0] or 0
    seq = last_seq
    stored: list[Message] = []
    added_active = added_tool_calls = 0
    activity: float | None = None
    for m in batch:
        timestamp = now if m.timestamp is None else m.timestamp
        row = (session_id, m.uid, seq + 1, m.role, m.content, m.parts, m.tool_calls, m.tool_call_id,
               m.tool_name, m.reasoning, m.finish_reason, m.token_count, timestamp, m.display_kind,
               m.state)
        conn.execute(_INSERT, row)
        if not conn.changes():  # the uid is stored already (DO NOTHING)
            existing = get_by_uid(conn, session_id, m.uid)
            if not m.same_payload(existing):
                raise MessageConflict(
                    f"message uid {m.uid!r} is already stored in session {session_id} with different "
                    "content; give the new message its own uid"
                )
            stored.append(existing)
            continue
        seq += 1
        stored.append(from_row((conn.last_insert_rowid(), *row)))
        if m.state == MessageState.ACTIVE.value:
            added_active += 1
            added_tool_calls += m.tool_call_total
            if m.role in ACTIVITY_ROLES and m.display_kind != INTERNAL_NOTIFICATION:
                activity = timestamp if activity is None else max(activity, timestamp)
    if added_active:
        conn.execute(
            "UPDATE sessions SET message_count = message_count + ?, tool_call_count = tool_call_count + ?, "
            "last_activity_at = CASE WHEN ? IS NULL THEN last_activity_at "
            "ELSE max(coalesce(last_activity_at, ?), ?) END WHERE id = ?",
            (added_active, added_tool_calls, activity, activity, activity, session_id),
        )
    return stored


def get_by_uid(conn: apsw.Connection, session_id: str, uid: str) -> Message:
    row = conn.execute(
        f"SELECT {COLUMNS} FROM messages WHERE session_id = ? AND uid = ?", (session_id, uid)
    ).fetchone()
    return from_row(row)


def transcript(
    conn: apsw.Connection,
    session_id: str,
    *,
    include_compacted: bool,
    limit: int | None,
    before: int | None,
    after: int | None,
    order: str,
) -> list[Message]:
    """A session's messages in commit order (or newest first with order='desc')."""
    sessions.require(conn, session_id)
    # The live view spells its state as a literal so the planner can use the partial
    # index of active rows (a bound parameter cannot prove the index's WHERE).
    state = "state IN ('active', 'compacted')" if include_compacted else "state = 'active'"
    sql = f"SELECT {COLUMNS} FROM messages WHERE session_id = ? AND {state}"
    params: list[Any] = [session_id]
    if before is not None:
        sql += " AND id < ?"
        params.append(before)
    if after is not None:
        sql += " AND id > ?"
        params.append(after)
    sql += f" ORDER BY id {order.upper()}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [from_row(r) for r in conn.execute(sql, params)]
