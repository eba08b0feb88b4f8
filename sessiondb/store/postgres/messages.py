"""Message rows: idempotent inserts by uid, counters, transcript reads.

`insert` runs inside the append's transaction with the session's row already locked, so
the appends of one session take turns: seq numbers follow on without gaps and ids grow
in commit order within a session, whichever process wrote them. A batch is one multi-row
`INSERT ... ON CONFLICT DO NOTHING`; when some of its uids were stored already (a retried
or re-flushed batch), the rows just inserted are taken back and the batch is stored
again knowing which uids exist, so seq numbers never skip.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, Iterable, Iterator, Sequence

import psycopg

from ...errors import MessageConflict
from ...model import ACTIVITY_ROLES, INTERNAL_NOTIFICATION, Message, MessageState
from ...inputs import NewMessage
from .text import from_server, to_server

COLUMNS = (
    "id, session_id, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, "
    "reasoning, finish_reason, token_count, timestamp, display_kind, state"
)
#: Every column of a row but its id, in insert order.
WRITTEN = (
    "session_id, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, token_count, timestamp, display_kind, state"
)
_ONE_ROW = "(" + ", ".join(["%s"] * 15) + ")"
_ACTIVE = MessageState.ACTIVE.value


def from_row(row: Sequence[Any]) -> Message:
    (mid, sid, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name,
     reasoning, finish_reason, token_count, timestamp, display_kind, state) = row
    return Message(
        id=mid, session_id=sid, uid=uid, seq=seq, role=role,
        content=json.loads(parts) if parts is not None else from_server(content),
        tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
        tool_call_id=tool_call_id, tool_name=tool_name, reasoning=from_server(reasoning),
        finish_reason=finish_reason, token_count=token_count, timestamp=timestamp,
        display_kind=display_kind, state=state,
    )


def model_rows_from_server(rows: Iterable[Sequence[Any]]) -> Iterator[tuple[Any, ...]]:
    """store/model_rows.py's rows with their content and reasoning as sessiondb was given them."""
    for uid, role, content, parts, tool_calls, tool_call_id, name, reasoning in rows:
        yield uid, role, from_server(content), parts, tool_calls, tool_call_id, name, from_server(reasoning)


def row(session_id: str, m: NewMessage, seq: int, now: float) -> tuple[Any, ...]:
    """The row (WRITTEN's columns) storing `m` as message `seq` of the session."""
    return (session_id, m.uid, seq, m.role, to_server(m.content), m.parts, m.tool_calls, m.tool_call_id,
            m.tool_name, to_server(m.reasoning), m.finish_reason, m.token_count,
            now if m.timestamp is None else m.timestamp, m.display_kind, m.state)


#: Where each text column of append_fresh's p_texts sits in a row (migration 0006): uid, role,
#: content, parts, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, display_kind, state.
TEXT_COLUMNS = (1, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14)
_FRESH = "SELECT append_fresh(%s::text, %s::text[], %s::bigint[], %s::float8[], %s::bigint, %s::bigint, %s::float8)"
_SCALAR_BATCH = 16  # messages up to which the call spells its arrays out of scalar parameters


@lru_cache(maxsize=_SCALAR_BATCH)
def _fresh_of_scalars(count: int) -> str:
    """_FRESH for `count` messages with every array element a parameter of its own: psycopg
    adapts a scalar in C and an array element by element in Python, about 50 µs of a
    one-message append's client CPU (docs/fleet.md)."""
    texts, each = ", ".join(["%s"] * (len(TEXT_COLUMNS) * count)), ", ".join(["%s"] * count)
    return (f"SELECT append_fresh(%s::text, ARRAY[{texts}]::text[], ARRAY[{each}]::bigint[], "
            f"ARRAY[{each}]::float8[], %s::bigint, %s::bigint, %s::float8)")


def append_fresh(conn: psycopg.Connection, session_id: str, batch: Sequence[NewMessage],
                 now: float) -> list[Message] | None:
    """The common append as one statement (append_fresh: migration 0006's arguments, 0007's
    uid check, 0008's words and one-message insert, 0009's batch read in one pass), run
    outside a transaction so that one round trip commits it; None, nothing written, when
    the batch needs the full append (a rotated session or continuation, a uid stored
    already or given twice). Every text column of the batch travels in one array, built
    on the server out of scalar parameters for a small batch."""
    rows = [row(session_id, m, 0, now) for m in batch]
    active = [(m, r[12]) for m, r in zip(batch, rows) if m.state == _ACTIVE]
    activity = [ts for m, ts in active if m.role in ACTIVITY_ROLES and m.display_kind != INTERNAL_NOTIFICATION]
    texts, tokens, times = [r[i] for r in rows for i in TEXT_COLUMNS], [r[11] for r in rows], [r[12] for r in rows]
    counts = (len(active), sum(m.tool_call_total for m, _ in active), max(activity) if activity else None)
    if len(rows) <= _SCALAR_BATCH:
        call = conn.execute(_fresh_of_scalars(len(rows)), (session_id, *texts, *tokens, *times, *counts))
    else:
        call = conn.execute(_FRESH, (session_id, texts, tokens, times, *counts))
    result = call.fetchone()[0]
    if result is None:
        return None
    last_seq, ids = result[0], result[1:]
    return [from_row((mid, session_id, r[1], last_seq + n, *r[3:])) for n, (mid, r) in enumerate(zip(ids, rows), 1)]


def insert_rows(conn: psycopg.Connection, rows: Sequence[tuple[Any, ...]], conflict: bool = True) -> list[int | None]:
    """Insert rows of WRITTEN's columns in one statement; each row's new id, None where its
    uid was stored already (with `conflict`)."""
    if not rows:
        return []
    sql = (f"INSERT INTO messages({WRITTEN}) VALUES {', '.join([_ONE_ROW] * len(rows))}"
           + (" ON CONFLICT (session_id, uid) DO NOTHING" if conflict else "") + " RETURNING id, uid")
    ids = dict((uid, mid) for mid, uid in conn.execute(sql, [v for row in rows for v in row]).fetchall())
    return [ids.get(row[1]) for row in rows]


def by_uids(conn: psycopg.Connection, session_ids: Sequence[str], uids: Sequence[str]) -> dict[str, Message]:
    """Rows with these uids in these sessions, by uid; the first session listed wins."""
    found: dict[str, Message] = {}
    if not uids or not session_ids:
        return found
    rank = {sid: i for i, sid in enumerate(session_ids)}
    for row in conn.execute(f"SELECT {COLUMNS} FROM messages WHERE session_id = ANY(%s) AND uid = ANY(%s)",
                            (list(session_ids), list(uids))):
        m = from_row(row)
        if m.uid not in found or rank[m.session_id] < rank[found[m.uid].session_id]:
            found[m.uid] = m
    return found


def insert(conn: psycopg.Connection, session_id: str, batch: Sequence[NewMessage], now: float,
           last_seq: int) -> list[Message]:
    """Store the messages not already stored in the (locked) session; the stored row of each."""
    plan = _plan(session_id, batch, now, last_seq, stored={})
    ids = _insert_planned(conn, plan, conflict=True)
    if any(isinstance(item, tuple) and mid is None for item, mid in zip(plan, ids)):
        conn.execute("DELETE FROM messages WHERE id = ANY(%s)", ([i for i in ids if i is not None],))
        plan = _plan(session_id, batch, now, last_seq, stored=by_uids(conn, [session_id], [m.uid for m in batch]))
        ids = _insert_planned(conn, plan, conflict=False)
    out: list[Message] = []
    written: dict[str, Message] = {}
    added: list[tuple[NewMessage, float]] = []
    for m, item, mid in zip(batch, plan, ids):
        if isinstance(item, tuple):
            written[m.uid] = from_row((mid, *item))
            out.append(written[m.uid])
            if m.state == _ACTIVE:
                added.append((m, item[12]))
        else:  # stored before, or earlier in this batch
            out.append(_same_or_conflict(m, item if isinstance(item, Message) else written[m.uid], session_id))
    _count(conn, session_id, added)
    return out


def _insert_planned(conn: psycopg.Connection, plan: list[Any], conflict: bool) -> list[int | None]:
    rows = [item for item in plan if isinstance(item, tuple)]
    ids = iter(insert_rows(conn, rows, conflict))
    return [next(ids) if isinstance(item, tuple) else None for item in plan]


def _plan(session_id: str, batch: Sequence[NewMessage], now: float, last_seq: int,
          stored: dict[str, Message]) -> list[Any]:
    """For each message: the row to insert, the stored Message its uid names, or the uid
    itself when an earlier message of the batch has it."""
    plan: list[Any] = []
    seq = last_seq
    seen: set[str] = set()
    for m in batch:
        if m.uid in stored:
            plan.append(stored[m.uid])
        elif m.uid in seen:
            plan.append(m.uid)
        else:
            seen.add(m.uid)
            seq += 1
            plan.append(row(session_id, m, seq, now))
    return plan


def _same_or_conflict(m: NewMessage, stored: Any, session_id: str) -> Message:
    if not m.same_payload(stored):
        raise MessageConflict(
            f"message uid {m.uid!r} is already stored in session {session_id} with different "
            "content; give the new message its own uid")
    return stored


def _count(conn: psycopg.Connection, session_id: str, added: list[tuple[NewMessage, float]]) -> None:
    """Counters and the activity clock take in the active rows just stored."""
    if not added:
        return
    activity = [ts for m, ts in added if m.role in ACTIVITY_ROLES and m.display_kind != INTERNAL_NOTIFICATION]
    conn.execute(
        "UPDATE sessions SET message_count = message_count + %s, tool_call_count = tool_call_count + %s, "
        "last_activity_at = greatest(last_activity_at, %s) WHERE id = %s",
        (len(added), sum(m.tool_call_total for m, _ in added), max(activity) if activity else None, session_id))


def recount(conn: psycopg.Connection, session_id: str) -> None:
    """Set a session's message and tool-call counts from its active rows (not its activity)."""
    conn.execute(
        "UPDATE sessions SET "
        "message_count = (SELECT count(*) FROM messages WHERE session_id = %(s)s AND state = 'active'), "
        "tool_call_count = (SELECT coalesce(sum(jsonb_array_length(json_value(tool_calls))), 0) FROM messages "
        "WHERE session_id = %(s)s AND state = 'active' AND tool_calls IS NOT NULL) WHERE id = %(s)s",
        {"s": session_id})


def transcript(conn: psycopg.Connection, session_id: str, *, include_compacted: bool, limit: int | None,
               before: int | None, after: int | None, order: str) -> list[Message]:
    """A session's messages in commit order (or newest first with order='desc')."""
    state = "state IN ('active', 'compacted')" if include_compacted else "state = 'active'"
    sql = f"SELECT {COLUMNS} FROM messages WHERE session_id = %s AND {state}"
    params: list[Any] = [session_id]
    if before is not None:
        sql += " AND id < %s"
        params.append(before)
    if after is not None:
        sql += " AND id > %s"
        params.append(after)
    sql += " ORDER BY id " + ("DESC" if order == "desc" else "ASC")
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    return [from_row(r) for r in conn.execute(sql, params)]
