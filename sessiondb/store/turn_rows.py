"""Turn rows on every backend: begin, end, read one, list a session's (the `turns` table).

Units of work over `Rows` (store/rows.py). Beginning and ending are idempotent: a turn
begun again is returned as stored, and ending it again with the same reason changes
nothing, so a unit of work run again stores nothing twice. An end reads its turn's row
locked, so two processes ending one turn take turns and the second sees the first's end.
"""

from __future__ import annotations

import json

from ..errors import Conflict, NotFound
from ..model import Turn
from . import sessions
from .commands import BeginTurn, EndTurn
from .rows import INSERTED, Row, Rows

_ENDED = ("ended_at", "outcome", "reason", "detail", "receipts", "continued_by")


def from_row(row: Row) -> Turn:
    return Turn(**{**row, "receipts": json.loads(row["receipts"])})


def begin(rows: Rows, command: BeginTurn) -> Turn:
    stored = _find(rows, command.id)
    if stored is None:
        sessions.require(rows, command.session_id)
        rows.insert("turns", [{"id": command.id, "session_id": command.session_id, "user_uid": command.user_uid,
                               "cwd": command.cwd, "started_at": command.started_at}], skip_taken=True)
        stored = get(rows, command.id)  # ours, or one another writer just began under the id
    if stored.session_id != command.session_id:
        raise Conflict(f"turn {command.id!r} belongs to session {stored.session_id!r}; nothing was written")
    return stored


def end(rows: Rows, command: EndTurn) -> Turn:
    turn = _find(rows, command.id, lock=True)
    if turn is None:
        raise NotFound(f"no turn {command.id!r} in this store")
    if turn.reason is not None:
        if turn.reason == command.reason:
            return turn
        raise Conflict(f"turn {command.id!r} already ended ({turn.reason}); nothing was written")
    if command.continued_by is not None:
        follower = _find(rows, command.continued_by)
        if follower is None or follower.session_id != turn.session_id:
            raise NotFound(f"no turn {command.continued_by!r} in session {turn.session_id!r} to continue this one")
    rows.update("turns", {"id": command.id}, set={name: getattr(command, name) for name in _ENDED})
    return get(rows, command.id)


def get(rows: Rows, turn_id: str) -> Turn:
    turn = _find(rows, turn_id)
    if turn is None:
        raise NotFound(f"no turn {turn_id!r} in this store")
    return turn


def of_session(rows: Rows, session_id: str, limit: int) -> list[Turn]:
    """The session's newest `limit` turns, oldest first."""
    sessions.require(rows, session_id)
    newest = rows.select("turns", {"session_id": session_id}, order=(f"-{INSERTED}",), limit=limit)
    return [from_row(row) for row in reversed(newest)]


def _find(rows: Rows, turn_id: str, *, lock: bool = False) -> Turn | None:
    found = rows.select("turns", {"id": turn_id}, lock=lock)
    return from_row(found[0]) if found else None
