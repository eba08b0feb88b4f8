"""Turn rows: begin, end, read one, list a session's (the `turns` table of migration 0005)."""

from __future__ import annotations

import json
from typing import Any

import apsw

from ...errors import Conflict, NotFound
from ...model import Turn
from ..commands import BeginTurn, EndTurn
from . import sessions

COLUMNS = "id, session_id, user_uid, cwd, started_at, ended_at, outcome, reason, detail, receipts, continued_by"


def from_row(row: tuple[Any, ...]) -> Turn:
    *head, receipts, continued_by = row
    return Turn(*head, receipts=json.loads(receipts), continued_by=continued_by)


def begin(conn: apsw.Connection, command: BeginTurn) -> Turn:
    stored = _find(conn, command.id)
    if stored is not None:
        if stored.session_id != command.session_id:
            raise Conflict(f"turn {command.id!r} belongs to session {stored.session_id!r}; nothing was written")
        return stored
    sessions.require(conn, command.session_id)
    conn.execute("INSERT INTO turns(id, session_id, user_uid, cwd, started_at) VALUES (?, ?, ?, ?, ?)",
                 (command.id, command.session_id, command.user_uid, command.cwd, command.started_at))
    return get(conn, command.id)


def end(conn: apsw.Connection, command: EndTurn) -> Turn:
    turn = get(conn, command.id)
    if turn.reason is not None:
        if turn.reason == command.reason:
            return turn
        raise Conflict(f"turn {command.id!r} already ended ({turn.reason}); nothing was written")
    if command.continued_by is not None:
        follower = _find(conn, command.continued_by)
        if follower is None or follower.session_id != turn.session_id:
            raise NotFound(f"no turn {command.continued_by!r} in session {turn.session_id!r} to continue this one")
    conn.execute(
        "UPDATE turns SET ended_at = ?, outcome = ?, reason = ?, detail = ?, receipts = ?, continued_by = ? "
        "WHERE id = ?",
        (command.ended_at, command.outcome, command.reason, command.detail, command.receipts,
         command.continued_by, command.id))
    return get(conn, command.id)


def get(conn: apsw.Connection, turn_id: str) -> Turn:
    turn = _find(conn, turn_id)
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in this store")
    return turn


def of_session(conn: apsw.Connection, session_id: str, limit: int) -> list[Turn]:
    sessions.require(conn, session_id)
    rows = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE session_id = ? ORDER BY seq DESC LIMIT ?",
                        (session_id, limit)).fetchall()
    return [from_row(row) for row in reversed(rows)]


def _find(conn: apsw.Connection, turn_id: str) -> Turn | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE id = ?", (turn_id,)).fetchone()
    return None if row is None else from_row(row)
