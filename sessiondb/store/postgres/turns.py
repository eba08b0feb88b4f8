"""Turn rows: begin, end, read one, list a session's (the `turns` table of migration 0002).

Beginning and ending are idempotent, so a unit of work run again after a broken
connection stores nothing twice: a turn begun again is returned as stored, and ending
it again with the same reason changes nothing.
"""

from __future__ import annotations

import json
from typing import Any

import psycopg

from ...errors import Conflict, NotFound
from ...model import Turn
from ..commands import BeginTurn, EndTurn
from . import sessions

COLUMNS = "id, session_id, user_uid, cwd, started_at, ended_at, outcome, reason, detail, receipts, continued_by"


def from_row(row: tuple[Any, ...]) -> Turn:
    *head, receipts, continued_by = row
    return Turn(*head, receipts=json.loads(receipts), continued_by=continued_by)


def begin(conn: psycopg.Connection, command: BeginTurn) -> Turn:
    stored = _find(conn, command.id)
    if stored is None:
        sessions.require(conn, command.session_id)
        conn.execute("INSERT INTO turns(id, session_id, user_uid, cwd, started_at) VALUES (%s, %s, %s, %s, %s) "
                     "ON CONFLICT (id) DO NOTHING",
                     (command.id, command.session_id, command.user_uid, command.cwd, command.started_at))
        stored = get(conn, command.id)  # ours, or one another writer just began under the id
    if stored.session_id != command.session_id:
        raise Conflict(f"turn {command.id!r} belongs to session {stored.session_id!r}; nothing was written")
    return stored


def end(conn: psycopg.Connection, command: EndTurn) -> Turn:
    turn = _find(conn, command.id, lock=True)
    if turn is None:
        raise NotFound(f"no turn {command.id!r} in this store")
    if turn.reason is not None:
        if turn.reason == command.reason:
            return turn
        raise Conflict(f"turn {command.id!r} already ended ({turn.reason}); nothing was written")
    if command.continued_by is not None:
        follower = _find(conn, command.continued_by)
        if follower is None or follower.session_id != turn.session_id:
            raise NotFound(f"no turn {command.continued_by!r} in session {turn.session_id!r} to continue this one")
    conn.execute(
        "UPDATE turns SET ended_at = %s, outcome = %s, reason = %s, detail = %s, receipts = %s, continued_by = %s "
        "WHERE id = %s",
        (command.ended_at, command.outcome, command.reason, command.detail, command.receipts,
         command.continued_by, command.id))
    return get(conn, command.id)


def get(conn: psycopg.Connection, turn_id: str) -> Turn:
    turn = _find(conn, turn_id)
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in this store")
    return turn


def of_session(conn: psycopg.Connection, session_id: str, limit: int) -> list[Turn]:
    """The session's newest `limit` turns, oldest first."""
    sessions.require(conn, session_id)
    rows = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE session_id = %s ORDER BY seq DESC LIMIT %s",
                        (session_id, limit)).fetchall()
    return [from_row(row) for row in reversed(rows)]


def _find(conn: psycopg.Connection, turn_id: str, lock: bool = False) -> Turn | None:
    suffix = " FOR NO KEY UPDATE" if lock else ""
    row = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE id = %s{suffix}", (turn_id,)).fetchone()
    return None if row is None else from_row(row)
