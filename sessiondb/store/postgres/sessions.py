"""Session rows: create, read, change, delete, find by what a person types (listing: store/listing.py).

Every function takes the connection of the unit of work it runs in (store.py decides
which transaction). Writes to a session lock its row first (`FOR NO KEY UPDATE`), so two
processes changing one session take turns while different sessions never wait on each
other.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from ...errors import InvalidInput, NotFound, SessionExists, TitleConflict
from ...inputs import patched_metadata
from ...model import Session
from ..commands import EndSession, PatchMetadata, ReopenSession, SessionChange, SetTitle

COLUMNS = (
    "id, source, profile, session_key, user_id, chat_id, chat_type, thread_id, title, model, "
    "parent_session_id, started_at, ended_at, end_reason, last_activity_at, message_count, "
    "tool_call_count, pinned, archived, hidden, metadata, parent_relation"
)
INSERTED = (
    "id", "source", "profile", "session_key", "user_id", "chat_id", "chat_type", "thread_id",
    "title", "model", "parent_session_id", "started_at", "metadata", "parent_relation",
)
AMBIGUOUS_SHOWN = 5  # candidates named when an id prefix matches several sessions


def from_row(row: tuple[Any, ...]) -> Session:
    *head, pinned, archived, hidden, metadata, parent_relation = row
    return Session(*head, bool(pinned), bool(archived), bool(hidden), json.loads(metadata), parent_relation)


def get(conn: psycopg.Connection, session_id: str, *, lock: bool = False) -> Session:
    suffix = " FOR NO KEY UPDATE" if lock else ""
    row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = %s{suffix}", (session_id,)).fetchone()
    if row is None:
        raise NotFound(f"no session {session_id!r} in this store")
    return from_row(row)


def require(conn: psycopg.Connection, session_id: str) -> None:
    if conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,)).fetchone() is None:
        raise NotFound(f"no session {session_id!r} in this store")


def create(conn: psycopg.Connection, values: dict[str, Any]) -> Session:
    """Insert a session. The same row created again (a retried call whose commit was not
    acknowledged) is returned as it is; another session under the id is SessionExists."""
    if values.get("parent_session_id") is not None:
        require(conn, values["parent_session_id"])
    check_title_free(conn, values.get("title"), values["id"])
    inserted = conn.execute(
        f"INSERT INTO sessions({', '.join(INSERTED)}) VALUES ({', '.join(['%s'] * len(INSERTED))}) "
        "ON CONFLICT (id) DO NOTHING RETURNING id",
        tuple(values.get(name) for name in INSERTED),
    ).fetchone()
    stored = get(conn, values["id"])
    if inserted is None and not _same_creation(stored, values):
        raise SessionExists(f"a session with id {values['id']!r} already exists; give the new session its own id")
    return stored


def _same_creation(stored: Session, values: dict[str, Any]) -> bool:
    return (stored.started_at, stored.source, stored.title, stored.parent_session_id) == (
        values["started_at"], values["source"], values.get("title"), values.get("parent_session_id"))


def change(conn: psycopg.Connection, session_id: str, change: SessionChange) -> Session:
    """Apply one change to the session's row and return the row as it now is."""
    current = get(conn, session_id, lock=True)
    match change:
        case EndSession(reason=reason, now=now):  # the first end time is kept
            conn.execute("UPDATE sessions SET ended_at = coalesce(ended_at, %s), end_reason = %s WHERE id = %s",
                         (now, reason, session_id))
        case ReopenSession():
            conn.execute("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = %s", (session_id,))
        case SetTitle(title=title):
            check_title_free(conn, title, session_id)
            conn.execute("UPDATE sessions SET title = %s WHERE id = %s", (title, session_id))
        case PatchMetadata(patch=patch, max_bytes=max_bytes):  # not user activity
            conn.execute("UPDATE sessions SET metadata = %s WHERE id = %s",
                         (patched_metadata(current.metadata, patch, max_bytes), session_id))
    return get(conn, session_id)


def check_title_free(conn: psycopg.Connection, title: str | None, session_id: str | None) -> None:
    if title is None:
        return
    row = conn.execute("SELECT id FROM sessions WHERE title = %s", (title,)).fetchone()
    if row is not None and row[0] != session_id:
        raise TitleConflict(f"the title {title!r} is already used by session {row[0]}; choose another")


def delete(conn: psycopg.Connection, session_id: str) -> None:
    if conn.execute("DELETE FROM sessions WHERE id = %s RETURNING 1", (session_id,)).fetchone() is None:
        raise NotFound(f"no session {session_id!r} in this store")


def find(conn: psycopg.Connection, ref: str, title: str | None) -> Session:
    """The session whose id is `ref`, else whose title is `title` (or, when only one session
    has it, the title in another case), else whose id starts with `ref`."""
    row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = %s", (ref,)).fetchone()
    if row is None and title is not None:
        row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE title = %s", (title,)).fetchone()
        if row is None:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM sessions WHERE lower(title) = lower(%s) AND title IS NOT NULL LIMIT 2",
                (title,)).fetchall()
            row = rows[0] if len(rows) == 1 else None
    if row is not None:
        return from_row(row)
    # The range (in byte order) lets the prefix index serve it; starts_with() keeps it exact.
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE id COLLATE \"C\" >= %(ref)s "
        "AND id COLLATE \"C\" < %(ref)s || chr(1114111) AND starts_with(id, %(ref)s) ORDER BY id LIMIT %(n)s",
        {"ref": ref, "n": AMBIGUOUS_SHOWN + 1}).fetchall()
    if len(rows) == 1:
        return from_row(rows[0])
    if not rows:
        raise NotFound(
            f"no session has the id, id prefix or title {ref!r}; list sessions with `sessiondb sessions list`")
    shown = ", ".join(r[0] for r in rows[:AMBIGUOUS_SHOWN])
    more = " and more" if len(rows) > AMBIGUOUS_SHOWN else ""
    raise InvalidInput(f"{ref!r} is the start of several session ids ({shown}{more}); give more of the id")
