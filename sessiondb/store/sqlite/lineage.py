"""Lineage: how sessions continue one another, and the reads and writes that follow it.

A session rotated by a compaction ends with reason 'compression' and is continued by a
child whose `parent_relation` is 'compression'. Those children form one conversation:
`tip` follows them across any number of hops (bounded), preferring a continuation that
is still live; a late write to a rotated session lands on that tip, and is refused when
the tip has ended (S-05); and a uid
stored anywhere in the chain is stored once: appending it again to a descendant returns
the stored row instead of writing a copy (S-01 across rotations). Branches, resets and
delegations are other relations and are never followed.

Also here: flags that apply to the whole conversation (S-41), rewind/restore (marking
messages `rewound` and back), branch (a new session from a copy of another's messages), and
resume (the model-ready conversation of the tip).
"""

from __future__ import annotations

from typing import Any, Sequence

import apsw

from ...errors import MessageConflict, NotFound, StorageError
from ...model import ACTIVITY_ROLES, BRANCH, COMPRESSION, INTERNAL_NOTIFICATION, Message, ModelMessage, Session
from ...inputs import NewMessage, child_session
from .. import model_rows, tips
from ..commands import SetFlags
from . import messages, sessions

#: Sessions a lineage walk visits at most (a guard against runaway chains).
MAX_HOPS = 1000


# --- following the chain -----------------------------------------------------------------


def _head(conn: apsw.Connection, session_id: str) -> tuple[str | None, str | None, str | None, float | None]:
    """(end_reason, parent_session_id, parent_relation, ended_at), or NotFound."""
    row = conn.execute(
        "SELECT end_reason, parent_session_id, parent_relation, ended_at FROM sessions WHERE id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r} in this store")
    return row


def _too_long(session_id: str) -> StorageError:
    return StorageError(
        f"the lineage of session {session_id} runs past {MAX_HOPS} sessions; it cannot be followed"
    )


def ancestors(conn: apsw.Connection, session_id: str) -> list[str]:
    """The compression ancestors of a session, nearest first (one recursive query)."""
    _head(conn, session_id)
    rows = conn.execute(
        """
        WITH RECURSIVE up(id, parent, relation, depth) AS (
            SELECT id, parent_session_id, parent_relation, 0 FROM sessions WHERE id = ?1
            UNION ALL
            SELECT s.id, s.parent_session_id, s.parent_relation, up.depth + 1
            FROM up JOIN sessions AS s ON s.id = up.parent
            WHERE up.relation = ?2 AND up.depth <= ?3
        )
        SELECT id FROM up WHERE depth > 0 ORDER BY depth
        """,
        (session_id, COMPRESSION, MAX_HOPS),
    ).fetchall()
    out: list[str] = []
    for (sid,) in rows:
        if sid == session_id or sid in out:
            break  # a cycle (only a hand-edited file has one): the chain ends here
        out.append(sid)
    if len(out) > MAX_HOPS:
        raise _too_long(session_id)
    return out


def resolve(conn: apsw.Connection, session_id: str) -> tuple[list[str], tips.Leaf]:
    """The path from `session_id` down to its tip (store/tips.py chooses it), and the tip."""
    _head(conn, session_id)
    came_from: dict[str, str | None] = {session_id: None}
    frontier = [session_id]
    leaves: list[tips.Leaf] = []
    while frontier:
        next_frontier = []
        for sid in frontier:
            children = conn.execute(
                "SELECT id FROM sessions WHERE parent_session_id = ? AND parent_relation = ?",
                (sid, COMPRESSION),
            ).fetchall()
            fresh = [c for (c,) in children if c not in came_from]
            for child in fresh:
                came_from[child] = sid
                if len(came_from) > MAX_HOPS:
                    raise _too_long(session_id)
            next_frontier.extend(fresh)
            if not fresh:
                leaves.append(tips.Leaf(sid, *conn.execute(
                    "SELECT end_reason, ended_at, started_at FROM sessions WHERE id = ?", (sid,)).fetchone()))
        frontier = next_frontier
    return tips.choose(came_from, leaves)


def tip(conn: apsw.Connection, session_id: str) -> Session:
    path, _ = resolve(conn, session_id)
    return sessions.get(conn, path[-1])


def lineage(conn: apsw.Connection, session_id: str) -> list[Session]:
    """The compression chain through `session_id`: root first, tip last."""
    up = ancestors(conn, session_id)
    path, _ = resolve(conn, session_id)
    return [sessions.get(conn, sid) for sid in [*reversed(up), *path]]


def lock(conn: apsw.Connection, session_id: str) -> tips.Head:
    """The session's head, read in the writer's transaction: the one writer of the file holds
    it until this write commits, so nothing changes the head meanwhile."""
    row = conn.execute(
        "SELECT end_reason, ended_at, parent_relation, coalesce((SELECT seq FROM messages WHERE session_id = ?1 "
        "ORDER BY id DESC LIMIT 1), 0) FROM sessions WHERE id = ?1",
        (session_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r} in this store")
    return tips.Head(*row)


def land(conn: apsw.Connection, session_id: str) -> tuple[str, tips.Head]:
    """The session a write addressed to `session_id` lands on (itself, or its live tip) and
    its head (store/tips.py's rule). A rotated session whose continuation has ended, for
    any reason, takes no late write: it would land where nobody reads it (S-05 fails closed).
    """
    return tips.land(session_id, lambda sid: lock(conn, sid), lambda sid: resolve(conn, sid))


def conversation(conn: apsw.Connection, session_id: str) -> list[str]:
    """Every session of the compression tree `session_id` belongs to: its root and all the
    root's compression descendants (bounded), root first."""
    up = ancestors(conn, session_id)
    root = up[-1] if up else session_id
    rows = conn.execute(
        """
        WITH RECURSIVE down(id, depth) AS (
            SELECT ?1, 0
            UNION
            SELECT s.id, down.depth + 1 FROM down
            JOIN sessions AS s ON s.parent_session_id = down.id AND s.parent_relation = ?2
            WHERE down.depth < ?3
        )
        SELECT id FROM down GROUP BY id ORDER BY min(depth)
        """,
        (root, COMPRESSION, MAX_HOPS),
    ).fetchall()
    return [sid for (sid,) in rows]


def set_flags(conn: apsw.Connection, session_id: str, change: SetFlags) -> Session:
    """Pin, archive and hide apply to the whole conversation (S-41): every session of its
    compression tree, in this one write, so a listing never shows the ancestors of a
    hidden tip. Not user activity."""
    for sid in conversation(conn, session_id):
        sessions.change(conn, sid, change)
    return sessions.get(conn, session_id)


# --- appends that follow the chain ---------------------------------------------------------


def append(conn: apsw.Connection, session_id: str, batch: Sequence[NewMessage], now: float) -> list[Message]:
    """messages.append, addressed through the lineage.

    A session closed by rotation hands the batch to its live tip (S-05), inside this one
    write: the rows come back with the tip's session id. A uid already stored in a
    compression ancestor of the target is not written again; its stored row is returned.
    """
    target, head = land(conn, session_id)  # one statement in the common case
    if head.parent_relation != COMPRESSION:
        return messages.append(conn, target, batch, now, last_seq=head.last_seq)
    up = ancestors(conn, target)
    if not up:
        return messages.append(conn, target, batch, now)
    earlier_rows = find_uids(conn, up, [m.uid for m in batch])
    earlier: dict[int, Message] = {}
    for index, m in enumerate(batch):
        found = earlier_rows.get(m.uid)
        if found is not None:
            if not m.same_payload(found):
                raise MessageConflict(
                    f"message uid {m.uid!r} is already stored in session {found.session_id} (an "
                    f"earlier part of this conversation) with different content; give the new "
                    "message its own uid"
                )
            earlier[index] = found
    if not earlier:
        return messages.append(conn, target, batch, now)
    fresh = [m for i, m in enumerate(batch) if i not in earlier]
    stored = iter(messages.append(conn, target, fresh, now) if fresh else [])
    return [earlier[i] if i in earlier else next(stored) for i in range(len(batch))]


def find_uids(conn: apsw.Connection, session_ids: Sequence[str], uids: Sequence[str]) -> dict[str, Message]:
    """The rows with these uids stored in these sessions, by uid (the nearest session wins)."""
    found: dict[str, Message] = {}
    rank = {sid: i for i, sid in enumerate(session_ids)}
    unique = list(dict.fromkeys(uids))
    # Chunked so that the bound parameters stay far below SQLite's limit.
    for i in range(0, len(unique), 500):
        chunk = unique[i:i + 500]
        rows = conn.execute(
            f"SELECT {messages.COLUMNS} FROM messages WHERE session_id IN ({', '.join('?' * len(session_ids))}) "
            f"AND uid IN ({', '.join('?' * len(chunk))})",
            (*session_ids, *chunk),
        )
        for row in rows:
            m = messages.from_row(row)
            if m.uid not in found or rank[m.session_id] < rank[found[m.uid].session_id]:
                found[m.uid] = m
    return found


def find_uid(conn: apsw.Connection, session_ids: Sequence[str], uid: str) -> Message | None:
    return find_uids(conn, session_ids, [uid]).get(uid) if session_ids else None


# --- counters --------------------------------------------------------------------------------


def recount(conn: apsw.Connection, session_id: str) -> None:
    """Set a session's message and tool-call counts from its active rows (not activity)."""
    conn.execute(
        "UPDATE sessions SET "
        "message_count = (SELECT count(*) FROM messages WHERE session_id = ?1 AND state = 'active'), "
        "tool_call_count = (SELECT coalesce(sum(json_array_length(tool_calls)), 0) FROM messages "
        "WHERE session_id = ?1 AND state = 'active' AND tool_calls IS NOT NULL) "
        "WHERE id = ?1",
        (session_id,),
    )


# --- rewind, restore, branch -------------------------------------------------------------------


def _require_message(conn: apsw.Connection, session_id: str, message_id: int) -> None:
    row = conn.execute("SELECT 1 FROM messages WHERE id = ? AND session_id = ?", (message_id, session_id)).fetchone()
    if row is None:
        raise NotFound(f"message {message_id} is not in session {session_id}")


def rewind(conn: apsw.Connection, session_id: str, to_message_id: int) -> int:
    """Mark the session's active messages after `to_message_id` rewound; how many."""
    sessions.require(conn, session_id)
    if to_message_id:
        _require_message(conn, session_id, to_message_id)
    conn.execute(
        "UPDATE messages SET state = 'rewound' WHERE session_id = ? AND state = 'active' AND id > ?",
        (session_id, to_message_id),
    )
    changed = conn.changes()
    if changed:
        recount(conn, session_id)
    return changed


def restore_rewound(conn: apsw.Connection, session_id: str) -> int:
    """Make every rewound message of the session a write lands on (`land`) active again; how many."""
    target, _ = land(conn, session_id)
    conn.execute("UPDATE messages SET state = 'active' WHERE session_id = ? AND state = 'rewound'", (target,))
    changed = conn.changes()
    if changed:
        recount(conn, target)
    return changed


_COPIED = (
    "uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, "
    "finish_reason, token_count, timestamp, display_kind"
)


def branch(conn: apsw.Connection, session_id: str, at_message_id: int, values: dict[str, Any]) -> Session:
    """A new session (relation 'branch') holding copies of the active messages up to the id.

    Copies keep their uid (the branch is another session, so identities do not collide,
    and re-flushing the loaded transcript into the branch stores nothing), seq, payload
    and timestamps; they get new ids. `values` carries the new session's id, start time
    and title.
    """
    source = sessions.get(conn, session_id)
    _require_message(conn, session_id, at_message_id)
    child = child_session(source, BRANCH, **values)
    sessions.create(conn, child)
    conn.execute(
        f"INSERT INTO messages(session_id, {_COPIED}, state) "
        f"SELECT ?, {_COPIED}, 'active' FROM messages "
        "WHERE session_id = ? AND state = 'active' AND id <= ? ORDER BY id",
        (child["id"], session_id, at_message_id),
    )
    recount(conn, child["id"])
    placeholders = ", ".join("?" * len(ACTIVITY_ROLES))
    conn.execute(
        "UPDATE sessions SET last_activity_at = (SELECT max(timestamp) FROM messages WHERE session_id = ?1 "
        f"AND role IN ({placeholders}) AND coalesce(display_kind, '') != ?) WHERE id = ?1",
        (child["id"], *sorted(ACTIVITY_ROLES), INTERNAL_NOTIFICATION),
    )
    return sessions.get(conn, child["id"])


# --- resume ------------------------------------------------------------------------------------


def live_messages(conn: apsw.Connection, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and all its active messages in order, as stored."""
    path, _ = resolve(conn, session_id)
    tip_id = path[-1]
    return tip_id, [messages.from_row(r) for r in conn.execute(
        f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = ? AND state = 'active' ORDER BY id", (tip_id,))]


def lineage_messages(conn: apsw.Connection, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and every message of the lineage through `session_id`: root first, each
    session's in id order, every state (what flush aligns a conversation with)."""
    path, _ = resolve(conn, session_id)
    chain = [*reversed(ancestors(conn, session_id)), *path]
    return path[-1], [messages.from_row(r) for sid in chain for r in conn.execute(
        f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = ? ORDER BY id", (sid,))]


def live_model_messages(conn: apsw.Connection, session_id: str, max_messages: int) -> list[ModelMessage]:
    """The tip's active messages in order, as a model takes them (store/model_rows.py)."""
    path, _ = resolve(conn, session_id)
    return model_rows.read(conn, path[-1], max_messages, mark="?")
