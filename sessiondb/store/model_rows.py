"""resume's rows on every backend: the narrow read of a live conversation, and the one place
a stored row becomes a `ModelMessage`.

A model is shown only role, content, tool_calls, tool_call_id, name and reasoning, and the
uid rides along as an attribute (S-09, S-44), so both backends read only those columns
and let SQL do what it does faster than Python: an internal notification's role is
'user' (S-09) and `name` is a tool message's tool, nobody else's. JSON columns (parts,
tool_calls) are text on both backends, parsed only when present. Both backends keep the
same `messages` table, so the SQL is written once here and runs on the backend's own
connection with its placeholder (`mark`) and, where it encodes text for its server
(PostgreSQL's NUL escape), what turns the rows back (`decode`).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterable

from ..errors import SessionTooLarge
from ..model import INTERNAL_NOTIFICATION, ModelMessage, Role

Row = tuple[Any, ...]
#: A row of these is what `build` takes: (uid, role, content, parts, tool_calls, tool_call_id,
#: name, reasoning).
COLUMNS = (
    f"uid, CASE WHEN display_kind = '{INTERNAL_NOTIFICATION}' THEN '{Role.USER.value}' ELSE role END, "
    f"content, parts, tool_calls, tool_call_id, CASE WHEN role = '{Role.TOOL.value}' THEN tool_name END, reasoning"
)


def read(conn: Any, session_id: str, max_messages: int, *, mark: str,
         decode: Callable[[Iterable[Row]], Iterable[Row]] | None = None) -> list[ModelMessage]:
    """The session's active messages in order, as a model takes them, on the backend's
    connection; over `max_messages` (0: no limit) SessionTooLarge, having read one more
    than it and counted only then, so the guard costs no second pass (S-42). `decode`:
    the backend's own text encoding turned back, row by row."""
    # The state as a literal, so that SQLite's planner can use the partial index of active rows.
    sql = f"SELECT {COLUMNS} FROM messages WHERE session_id = {mark} AND state = 'active' ORDER BY id"
    rows = conn.execute(f"{sql} LIMIT {mark}", (session_id, max_messages + 1)) if max_messages else \
        conn.execute(sql, (session_id,))
    out = build(decode(rows) if decode else rows)
    if max_messages and len(out) > max_messages:
        (count,) = conn.execute(f"SELECT count(*) FROM messages WHERE session_id = {mark} AND state = 'active'",
                                (session_id,)).fetchone()
        raise SessionTooLarge(f"session {session_id} holds {count:,} active messages",
                              limit=max_messages, count=count, session_id=session_id)
    return out


def build(rows: Iterable[Row]) -> list[ModelMessage]:
    """One ModelMessage per row, its keys in the order resume has always given them."""
    loads, new = json.loads, ModelMessage.__new__
    out: list[ModelMessage] = []
    add = out.append
    for uid, role, content, parts, tool_calls, tool_call_id, name, reasoning in rows:
        # Filled in place rather than through ModelMessage(fields, uid), whose __init__
        # copies a dict made for it: about 15% of a 20,000-message resume.
        m = new(ModelMessage)
        m.uid = uid
        m["role"] = role
        m["content"] = content if parts is None else loads(parts)
        if tool_calls is not None:
            m["tool_calls"] = loads(tool_calls)
        if tool_call_id is not None:
            m["tool_call_id"] = tool_call_id
        if name is not None:
            m["name"] = name
        if reasoning is not None:
            m["reasoning"] = reasoning
        add(m)
    return out

