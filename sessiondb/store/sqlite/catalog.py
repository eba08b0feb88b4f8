"""Finding a session by what a person types.

A person names a session by its exact id, its exact title (or the title in another case
of ASCII letters, when only one session has it), or a unique prefix of its id (ids start
with their creation time, so a few characters usually suffice).
"""

from __future__ import annotations

import apsw

from ...errors import InvalidInput, NotFound
from ...model import Session
from . import sessions

AMBIGUOUS_SHOWN = 5  # candidates named when a prefix matches several sessions


def find(conn: apsw.Connection, ref: str, title: str | None) -> Session:
    """The session whose id is `ref`, else whose title is `title`, else whose id starts with `ref`."""
    row = conn.execute(f"SELECT {sessions.COLUMNS} FROM sessions WHERE id = ?", (ref,)).fetchone()
    if row is None and title is not None:
        row = conn.execute(f"SELECT {sessions.COLUMNS} FROM sessions WHERE title = ?", (title,)).fetchone()
        if row is None:  # the title in another case, if only one session has it
            rows = conn.execute(
                f"SELECT {sessions.COLUMNS} FROM sessions WHERE title = ? COLLATE NOCASE LIMIT 2", (title,)
            ).fetchall()
            row = rows[0] if len(rows) == 1 else None
    if row is not None:
        return sessions.from_row(row)
    # The range uses the primary key; substr() keeps the match exact whatever the range admits.
    rows = conn.execute(
        f"SELECT {sessions.COLUMNS} FROM sessions WHERE id >= ?1 AND id < ?1 || char(1114111) "
        "AND substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT ?2",
        (ref, AMBIGUOUS_SHOWN + 1),
    ).fetchall()
    if len(rows) == 1:
        return sessions.from_row(rows[0])
    if not rows:
        raise NotFound(
            f"no session has the id, id prefix or title {ref!r}; list sessions with `sessiondb sessions list`"
        )
    shown = ", ".join(r[0] for r in rows[:AMBIGUOUS_SHOWN])
    more = " and more" if len(rows) > AMBIGUOUS_SHOWN else ""
    raise InvalidInput(f"{ref!r} is the start of several session ids ({shown}{more}); give more of the id")

