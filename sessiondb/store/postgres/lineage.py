"""Lineage: how sessions continue one another, and the reads and writes that follow it.

The rules are the contract's (store/contract.py): a session rotated by a compaction ends
with reason 'compression' and its child (relation 'compression') continues it; `tip`
follows those children, preferring one still live; a late write to a rotated session
lands on the tip; a uid stored anywhere up the chain is stored once. Branches, resets
and delegations are never followed. Here each walk is one recursive query: the chain up
from a session, or the compression subtree below it with what the tip is chosen by.
"""

from __future__ import annotations

from typing import Any, Sequence

import psycopg

from ...errors import MessageConflict, NotFound, StorageError
from ...model import ACTIVITY_ROLES, BRANCH, COMPRESSION, INTERNAL_NOTIFICATION, Message, ModelMessage, Session
from ...inputs import NewMessage, child_session
from .. import model_rows, tips
from ..commands import SetFlags
from . import messages, sessions

MAX_HOPS = 1000  # sessions a walk visits at most (a guard against runaway chains)

_UP = """
WITH RECURSIVE up(id, parent, relation, depth, path) AS (
    SELECT id, parent_session_id, parent_relation, 0, ARRAY[id] FROM sessions WHERE id = %(s)s
    UNION ALL
    SELECT s.id, s.parent_session_id, s.parent_relation, up.depth + 1, up.path || s.id
    FROM up JOIN sessions AS s ON s.id = up.parent
    WHERE up.relation = %(rel)s AND up.depth <= %(hops)s AND NOT s.id = ANY(up.path)
)
SELECT id FROM up WHERE depth > 0 ORDER BY depth
"""
# The compression subtree below a session: each member, whom it came from, and what
# choosing the tip needs (leaves are members without a compression child).
_DOWN = """
WITH RECURSIVE down(id, came_from, depth, path) AS (
    SELECT id, NULL::text, 0, ARRAY[id] FROM sessions WHERE id = %(s)s
    UNION ALL
    SELECT s.id, down.id, down.depth + 1, down.path || s.id
    FROM down JOIN sessions AS s ON s.parent_session_id = down.id AND s.parent_relation = %(rel)s
    WHERE down.depth <= %(hops)s AND NOT s.id = ANY(down.path)
)
SELECT d.id, d.came_from, s.end_reason, s.ended_at, s.started_at,
       NOT EXISTS (SELECT 1 FROM down AS c WHERE c.came_from = d.id)
FROM down AS d JOIN sessions AS s ON s.id = d.id
"""


def _too_long(session_id: str) -> StorageError:
    return StorageError(f"the lineage of session {session_id} runs past {MAX_HOPS} sessions; it cannot be followed")


def ancestors(conn: psycopg.Connection, session_id: str) -> list[str]:
    """The compression ancestors of a session, nearest first."""
    rows = conn.execute(_UP, {"s": session_id, "rel": COMPRESSION, "hops": MAX_HOPS}).fetchall()
    if len(rows) > MAX_HOPS:
        raise _too_long(session_id)
    return [sid for (sid,) in rows]


def resolve(conn: psycopg.Connection, session_id: str) -> tuple[list[str], tips.Leaf]:
    """The path from `session_id` down to its tip (store/tips.py chooses it), and the tip."""
    rows = conn.execute(_DOWN, {"s": session_id, "rel": COMPRESSION, "hops": MAX_HOPS}).fetchall()
    if not rows:
        raise NotFound(f"no session {session_id!r} in this store")
    if len(rows) > MAX_HOPS:
        raise _too_long(session_id)
    came_from = {sid: parent for sid, parent, *_ in rows}
    leaves = [tips.Leaf(sid, *end) for sid, _parent, *end, is_leaf in rows if is_leaf]
    return tips.choose(came_from, leaves)


def tip(conn: psycopg.Connection, session_id: str) -> Session:
    path, _ = resolve(conn, session_id)
    return sessions.get(conn, path[-1])


def lineage(conn: psycopg.Connection, session_id: str) -> list[Session]:
    """The compression chain through `session_id`: root first, tip last."""
    path, _ = resolve(conn, session_id)
    chain = [*reversed(ancestors(conn, session_id)), *path]
    rows = {row[0]: row for row in conn.execute(f"SELECT {sessions.COLUMNS} FROM sessions WHERE id = ANY(%s)",
                                                (chain,))}
    return [sessions.from_row(rows[sid]) for sid in chain]


def set_flags(conn: psycopg.Connection, session_id: str, change: SetFlags) -> Session:
    """Pin, archive and hide apply to the whole conversation (S-41): every session of the
    compression tree `session_id` belongs to (its root's subtree), in this one transaction,
    so a listing never shows the ancestors of a hidden tip. Not user activity."""
    up = ancestors(conn, session_id)
    rows = conn.execute(_DOWN, {"s": up[-1] if up else session_id, "rel": COMPRESSION, "hops": MAX_HOPS}).fetchall()
    if len(rows) > MAX_HOPS:
        raise _too_long(session_id)
    for sid in sorted(row[0] for row in rows):  # one lock order for every writer of the tree
        sessions.change(conn, sid, change)
    return sessions.get(conn, session_id)


def lock(conn: psycopg.Connection, session_id: str) -> tips.Head:
    """Lock the session's row for this transaction and read its head.

    A lock that waited reads the row as its previous holder committed it (a rotation's
    end included). The last seq is read by a statement of its own, after the lock is held:
    a statement that waited for a lock still reads the snapshot it started with, which
    would not show the messages the previous holder just committed."""
    row = conn.execute("SELECT end_reason, ended_at, parent_relation FROM sessions WHERE id = %s "
                       "FOR NO KEY UPDATE", (session_id,)).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r} in this store")
    last = conn.execute("SELECT seq FROM messages WHERE session_id = %s ORDER BY id DESC LIMIT 1",
                        (session_id,)).fetchone()
    return tips.Head(*row, last[0] if last else 0)


def land(conn: psycopg.Connection, session_id: str) -> tuple[str, tips.Head]:
    """The session a write addressed to `session_id` lands on (itself, or its live tip),
    locked for this transaction, and its head (store/tips.py's rule)."""
    return tips.land(session_id, lambda sid: lock(conn, sid), lambda sid: resolve(conn, sid))


def append(conn: psycopg.Connection, session_id: str, batch: Sequence[NewMessage], now: float) -> list[Message]:
    """An append addressed through the lineage (one transaction).

    A session closed by rotation hands the batch to its live tip, judged with the tip
    locked (`land`); the rows come back with the tip's id. A uid already stored in a
    compression ancestor of the target is not written again: its stored row is returned.
    """
    target, head = land(conn, session_id)
    if head.parent_relation != COMPRESSION:
        return messages.insert(conn, target, batch, now, head.last_seq)  # the common case
    earlier = messages.by_uids(conn, ancestors(conn, target), [m.uid for m in batch])
    kept: dict[int, Message] = {}
    for index, m in enumerate(batch):
        found = earlier.get(m.uid)
        if found is not None:
            if not m.same_payload(found):
                raise MessageConflict(
                    f"message uid {m.uid!r} is already stored in session {found.session_id} (an earlier "
                    "part of this conversation) with different content; give the new message its own uid")
            kept[index] = found
    fresh = [m for i, m in enumerate(batch) if i not in kept]
    stored = iter(messages.insert(conn, target, fresh, now, head.last_seq) if fresh else [])
    return [kept[i] if i in kept else next(stored) for i in range(len(batch))]


# --- rewind, restore, branch, resume -------------------------------------------------------


def _require_message(conn: psycopg.Connection, session_id: str, message_id: int) -> None:
    if conn.execute("SELECT 1 FROM messages WHERE id = %s AND session_id = %s",
                    (message_id, session_id)).fetchone() is None:
        raise NotFound(f"message {message_id} is not in session {session_id}")


def rewind(conn: psycopg.Connection, session_id: str, to_message_id: int) -> int:
    """Mark the session's active messages after `to_message_id` rewound; how many."""
    lock(conn, session_id)
    if to_message_id:
        _require_message(conn, session_id, to_message_id)
    changed = conn.execute("UPDATE messages SET state = 'rewound' WHERE session_id = %s AND state = 'active' "
                           "AND id > %s", (session_id, to_message_id)).rowcount
    if changed:
        messages.recount(conn, session_id)
    return changed


def restore_rewound(conn: psycopg.Connection, session_id: str) -> int:
    """Make every rewound message of the session a write lands on (`land`) active again; how many."""
    target, _ = land(conn, session_id)
    changed = conn.execute("UPDATE messages SET state = 'active' WHERE session_id = %s AND state = 'rewound'",
                           (target,)).rowcount
    if changed:
        messages.recount(conn, target)
    return changed


_COPIED = ("uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, "
           "finish_reason, token_count, timestamp, display_kind")


def branch(conn: psycopg.Connection, session_id: str, at_message_id: int, values: dict[str, Any]) -> Session:
    """A new session (relation 'branch') holding copies of the active messages up to the id;
    copies keep uid, seq, payload and timestamps and get new ids."""
    source = sessions.get(conn, session_id)
    _require_message(conn, session_id, at_message_id)
    child = child_session(source, BRANCH, **values)
    sessions.create(conn, child)
    conn.execute(f"INSERT INTO messages(session_id, {_COPIED}, state) SELECT %s, {_COPIED}, 'active' "
                 "FROM messages WHERE session_id = %s AND state = 'active' AND id <= %s ORDER BY id",
                 (child["id"], session_id, at_message_id))
    messages.recount(conn, child["id"])
    conn.execute("UPDATE sessions SET last_activity_at = (SELECT max(timestamp) FROM messages "
                 "WHERE session_id = %(s)s AND role = ANY(%(roles)s) AND coalesce(display_kind, '') <> %(internal)s) "
                 "WHERE id = %(s)s",
                 {"s": child["id"], "roles": sorted(ACTIVITY_ROLES), "internal": INTERNAL_NOTIFICATION})
    return sessions.get(conn, child["id"])


def live_messages(conn: psycopg.Connection, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and all its active messages in order, as stored."""
    path, _ = resolve(conn, session_id)
    tip_id = path[-1]
    return tip_id, [messages.from_row(r) for r in conn.execute(
        f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = %s AND state = 'active' ORDER BY id",
        (tip_id,))]


def lineage_messages(conn: psycopg.Connection, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and every message of the lineage through `session_id`: root first, each
    session's in id order, every state (what flush aligns a conversation with)."""
    path, _ = resolve(conn, session_id)
    chain = [*reversed(ancestors(conn, session_id)), *path]
    return path[-1], [messages.from_row(r) for sid in chain for r in conn.execute(
        f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = %s ORDER BY id", (sid,))]


def live_model_messages(conn: psycopg.Connection, session_id: str, max_messages: int) -> list[ModelMessage]:
    """The tip's active messages in order, as a model takes them (store/model_rows.py)."""
    path, _ = resolve(conn, session_id)
    return model_rows.read(conn, path[-1], max_messages, mark="%s", decode=messages.model_rows_from_server)
