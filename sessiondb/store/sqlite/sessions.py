"""Session rows: create, read, change (end, reopen, title, flags, metadata), delete (listing: store/listing.py).

Functions take the connection they run on: the store runs writes on its writer thread
(inside the group-commit transaction) and reads on a pooled read connection.
"""

from __future__ import annotations

import json
from typing import Any

import apsw

from ...errors import NotFound, SessionExists, TitleConflict
from ...model import Session
from ...inputs import patched_metadata
from ..commands import EndSession, PatchMetadata, ReopenSession, SessionChange, SetTitle

COLUMNS = (
    "id, source, profile, session_key, user_id, chat_id, chat_type, thread_id, title, model, "
    "parent_session_id, started_at, ended_at, end_reason, last_activity_at, message_count, "
    "tool_call_count, pinned, archived, hidden, metadata, parent_relation"
)
_INSERTED = (
    "id", "source", "profile", "session_key", "user_id", "chat_id", "chat_type", "thread_id",
    "title", "model", "parent_session_id", "started_at", "metadata", "parent_relation",
)


def from_row(row: tuple[Any, ...]) -> Session:
    *head, pinned, archived, hidden, metadata, parent_relation = row
    return Session(*head, bool(pinned), bool(archived), bool(hidden), json.loads(metadata), parent_relation)


def create(conn: apsw.Connection, values: dict[str, Any]) -> Session:
    if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (values["id"],)).fetchone():
        raise SessionExists(f"a session with id {values['id']!r} already exists; give the new session its own id")
    if values["parent_session_id"] is not None:
        require(conn, values["parent_session_id"])
    _check_title_free(conn, values["title"], None)
    conn.execute(
        f"INSERT INTO sessions({', '.join(_INSERTED)}) VALUES ({', '.join('?' * len(_INSERTED))})",
        tuple(values.get(name) for name in _INSERTED),
    )
    return get(conn, values["id"])


def get(conn: apsw.Connection, session_id: str) -> Session:
    row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r} in this store")
    return from_row(row)


def require(conn: apsw.Connection, session_id: str) -> None:
    if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
        raise NotFound(f"no session {session_id!r} in this store")


def change(conn: apsw.Connection, session_id: str, change: SessionChange) -> Session:
    """Apply one change to the session's row and return the row as it now is."""
    require(conn, session_id)
    match change:
        case EndSession(reason=reason, now=now):  # the first end time is kept
            conn.execute("UPDATE sessions SET ended_at = coalesce(ended_at, ?), end_reason = ? WHERE id = ?",
                         (now, reason, session_id))
        case ReopenSession():
            conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", (session_id,))
        case SetTitle(title=title):
            _check_title_free(conn, title, session_id)
            conn.execute("UPDATE sessions SET title = ? WHERE id = ?", (title, session_id))
        case PatchMetadata(patch=patch, max_bytes=max_bytes):  # not user activity
            conn.execute("UPDATE sessions SET metadata = ? WHERE id = ?",
                         (patched_metadata(get(conn, session_id).metadata, patch, max_bytes), session_id))
    return get(conn, session_id)


def _check_title_free(conn: apsw.Connection, title: str | None, session_id: str | None) -> None:
    if title is None:
        return
    row = conn.execute("SELECT id FROM sessions WHERE title = ?", (title,)).fetchone()
    if row is not None and row[0] != session_id:
        raise TitleConflict(f"the title {title!r} is already used by session {row[0]}; choose another")


def delete(conn: apsw.Connection, session_id: str) -> None:
    require(conn, session_id)
    conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
