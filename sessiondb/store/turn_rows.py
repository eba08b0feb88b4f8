"""Turn rows on every backend: begin, end, read one, list a session's (the `turns` table).

Both backends keep the same table (SQLite's migration 0005_turns, PostgreSQL's
0002_turns), so the SQL and the rules are written once here and a backend runs them on
its own connection, with its own placeholder (`mark`), the check that a session exists
(`require`) and, where writers of other processes run at once, the row lock an end takes
(`lock`). Beginning and ending are idempotent: a turn begun again is returned as stored,
and ending it again with the same reason changes nothing, so a unit of work run again
stores nothing twice.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ..errors import Conflict, NotFound
from ..model import Turn
from .commands import BeginTurn, EndTurn

COLUMNS = "id, session_id, user_uid, cwd, started_at, ended_at, outcome, reason, detail, receipts, continued_by"


def from_row(row: tuple[Any, ...]) -> Turn:
    *head, receipts, continued_by = row
    return Turn(*head, receipts=json.loads(receipts), continued_by=continued_by)


def begin(conn: Any, command: BeginTurn, *, mark: str, require: Callable[[Any, str], None]) -> Turn:
    stored = _find(conn, command.id, mark)
    if stored is None:
        require(conn, command.session_id)
        conn.execute(f"INSERT INTO turns(id, session_id, user_uid, cwd, started_at) VALUES ({', '.join([mark] * 5)}) "
                     "ON CONFLICT (id) DO NOTHING",
                     (command.id, command.session_id, command.user_uid, command.cwd, command.started_at))
        stored = get(conn, command.id, mark=mark)  # ours, or one another writer just began under the id
    if stored.session_id != command.session_id:
        raise Conflict(f"turn {command.id!r} belongs to session {stored.session_id!r}; nothing was written")
    return stored


def end(conn: Any, command: EndTurn, *, mark: str, lock: str = "") -> Turn:
    turn = _find(conn, command.id, mark, lock)
    if turn is None:
        raise NotFound(f"no turn {command.id!r} in this store")
    if turn.reason is not None:
        if turn.reason == command.reason:
            return turn
        raise Conflict(f"turn {command.id!r} already ended ({turn.reason}); nothing was written")
    if command.continued_by is not None:
        follower = _find(conn, command.continued_by, mark)
        if follower is None or follower.session_id != turn.session_id:
            raise NotFound(f"no turn {command.continued_by!r} in session {turn.session_id!r} to continue this one")
    fields = ("ended_at", "outcome", "reason", "detail", "receipts", "continued_by")
    conn.execute(f"UPDATE turns SET {', '.join(f'{name} = {mark}' for name in fields)} WHERE id = {mark}",
                 (*(getattr(command, name) for name in fields), command.id))
    return get(conn, command.id, mark=mark)


def get(conn: Any, turn_id: str, *, mark: str) -> Turn:
    turn = _find(conn, turn_id, mark)
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in this store")
    return turn


def of_session(conn: Any, session_id: str, limit: int, *, mark: str, require: Callable[[Any, str], None]) -> list[Turn]:
    """The session's newest `limit` turns, oldest first."""
    require(conn, session_id)
    rows = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE session_id = {mark} ORDER BY seq DESC LIMIT {mark}",
                        (session_id, limit)).fetchall()
    return [from_row(row) for row in reversed(rows)]


def _find(conn: Any, turn_id: str, mark: str, lock: str = "") -> Turn | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM turns WHERE id = {mark}{lock}", (turn_id,)).fetchone()
    return None if row is None else from_row(row)
