"""PostgreSQL's own way to store the common append: one statement, one round trip.

The append's rules are written once (store/lineage.py) and run here as everywhere; this is
the server-side function (append_fresh, migrations 0006-0009) that stores a batch in one
statement when the batch is the common case (a session never rotated, uids all new), and
declines, writing nothing, whenever the neutral append must decide. Also here: the
recount that the doctor's repair and an import run on a bare connection (the rules'
own is store/lineage.py's `recount`, over rows).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import psycopg

from ...inputs import NewMessage
from ...model import Message
from ..sql import message_row, session_added, stored_message, to_server

#: Where each text column of append_fresh's p_texts sits in a row (migration 0006): uid, role,
#: content, parts, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, display_kind, state.
TEXT_COLUMNS = (1, 3, 4, 5, 6, 7, 8, 9, 10, 13, 14)
_SCALAR_BATCH = 16  # messages up to which the call spells its arrays out of scalar parameters
#: Sets the durability of the statement's own transaction before the call runs: a CTE
#: that is MATERIALIZED is evaluated, once, before the query reading it.
_PINNED = "WITH pinned AS MATERIALIZED (SELECT set_config('synchronous_commit', %s, true)) "


@lru_cache(maxsize=4 * _SCALAR_BATCH)
def _fresh(count: int | None, schema: str | None, pinned: bool) -> str:
    """The call of append_fresh (in `schema`, else the one on the search_path) for `count`
    messages with every array element a parameter of its own (psycopg adapts a scalar in C
    and an array element by element in Python, about 50 µs of a one-message append's client
    CPU: docs/fleet.md), or with each array one parameter (`count` None); `pinned`, it
    first sets its transaction's synchronous_commit (a connection through a pooler keeps
    none: pooler.py)."""
    if count is None:
        texts = each = "%s"
    else:
        texts = "ARRAY[" + ", ".join(["%s"] * (len(TEXT_COLUMNS) * count)) + "]"
        each = "ARRAY[" + ", ".join(["%s"] * count) + "]"
    function = f'"{schema}".append_fresh' if schema is not None else "append_fresh"
    call = (f"SELECT {function}(%s::text, {texts}::text[], {each}::bigint[], {each}::float8[], %s::bigint, "
            f"%s::bigint, %s::float8)")
    return _PINNED + call + " FROM pinned" if pinned else call


def append_fresh(conn: psycopg.Connection, session_id: str, batch: Sequence[NewMessage], now: float,
                 schema: str | None = None, synchronous_commit: str | None = None) -> list[Message] | None:
    """The common append as one statement (append_fresh: migration 0006's arguments, 0007's
    uid check, 0008's words and one-message insert, 0009's batch read in one pass), run
    outside a transaction so that one round trip commits it; None, nothing written, when
    the batch needs the full append (a rotated session or continuation, a uid stored
    already or given twice). Every text column of the batch travels in one array, built
    on the server out of scalar parameters for a small batch. The function is `schema`'s
    (else the search_path's); `synchronous_commit` is set for the statement's transaction
    when given (through a pooler)."""
    rows = [message_row(session_id, m, 0, now, to_server) for m in batch]
    texts, tokens, times = [r[i] for r in rows for i in TEXT_COLUMNS], [r[11] for r in rows], [r[12] for r in rows]
    counts = session_added(batch, times)
    pinned = () if synchronous_commit is None else (synchronous_commit,)
    if len(rows) <= _SCALAR_BATCH:
        statement = _fresh(len(rows), schema, bool(pinned))
        call = conn.execute(statement, (*pinned, session_id, *texts, *tokens, *times, *counts))
    else:
        call = conn.execute(_fresh(None, schema, bool(pinned)), (*pinned, session_id, texts, tokens, times, *counts))
    result = call.fetchone()[0]
    if result is None:
        return None
    last_seq, ids = result[0], result[1:]
    return [stored_message((mid, session_id, r[1], last_seq + n, *r[3:])) for n, (mid, r) in enumerate(zip(ids, rows), 1)]


def recount(conn: psycopg.Connection, session_id: str) -> None:
    """Set a session's message and tool-call counts from its active rows (not its activity)."""
    conn.execute(
        "UPDATE sessions SET "
        "message_count = (SELECT count(*) FROM messages WHERE session_id = %(s)s AND state = 'active'), "
        "tool_call_count = (SELECT coalesce(sum(jsonb_array_length(json_value(tool_calls))), 0) FROM messages "
        "WHERE session_id = %(s)s AND state = 'active' AND tool_calls IS NOT NULL) WHERE id = %(s)s",
        {"s": session_id})
