"""Listing sessions, the same way on every backend: the filter, the order, the cursor.

A backend runs `sql(query, mark)` with its own placeholder and hands the rows it read
(one more than the page) to `page`. The cursor is the position after a page's last
session (its activity time and id), opaque to callers; `decode` refuses any other text.

A backend may index the minute of the activity time rather than the time itself (on
PostgreSQL an append's update of its session row is HOT only if no indexed value moves,
and the minute moves once a minute: postgres migration 0006). It names that column as
`minute`; the page is then ordered by the minute first, which is the same order, since the
minute only grows with the time, and the cursor and the activity filters bound the minute
too, so the index serves the page.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ..errors import InvalidInput
from ..model import Page, Session
from .commands import ListSessions

_ACTIVE = "coalesce(last_activity_at, started_at)"


def sql(query: ListSessions, columns: str, mark: str, minute: str | None = None) -> tuple[str, list[Any]]:
    """The page's SELECT (newest activity first) and its parameters, `mark` the placeholder;
    `minute` the column holding floor(activity time / 60), if the backend keeps one."""
    where, params = [], []
    if query.source is not None:
        where.append(f"source = {mark}")
        params.append(query.source)
    if not query.include_archived:
        where.append("archived = 0")
    if not query.include_hidden:
        where.append("hidden = 0")
    if query.pinned is not None:
        where.append(f"pinned = {mark}")
        params.append(int(query.pinned))
    for exact, on_minute, bound in ((">=", ">=", query.since), ("<", "<=", query.until)):
        if bound is not None:
            where.append(f"{_ACTIVE} {exact} {mark}")
            params.append(bound)
            if minute is not None:  # implied by the exact bound; the index serves it
                where.append(f"{minute} {on_minute} floor({mark} / 60)")
                params.append(bound)
    if query.cursor is not None:
        active, sid = decode(query.cursor)
        if minute is not None:
            where.append(f"{minute} <= floor({mark} / 60)")
            params.append(active)
        where.append(f"({_ACTIVE}, id) < ({mark}, {mark})")
        params += [active, sid]
    text = f"SELECT {columns} FROM sessions" + (" WHERE " + " AND ".join(where) if where else "")
    order = f"{_ACTIVE} DESC, id DESC" if minute is None else f"{minute} DESC, {_ACTIVE} DESC, id DESC"
    # Column names and clauses are fixed text; every value is a bound parameter.
    return text + f" ORDER BY {order} LIMIT {mark}", [*params, query.limit + 1]


def page(rows: list[Session], limit: int) -> Page:
    """The page from the rows read (at most `limit` + 1) and the cursor to the next."""
    more = len(rows) > limit
    rows = rows[:limit]
    return Page(rows, encode(rows[-1]) if more else None)


def encode(last: Session) -> str:
    position = [last.last_activity_at if last.last_activity_at is not None else last.started_at, last.id]
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode()


def decode(cursor: str) -> tuple[float, str]:
    try:
        active, sid = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        if isinstance(active, (int, float)) and not isinstance(active, bool) and isinstance(sid, str):
            return float(active), sid
    except (ValueError, TypeError):
        pass
    raise InvalidInput("the listing cursor is not one this store handed out; start the listing again")
