"""Listing sessions, the same way on every backend: the filter, the order, the cursor.

A backend runs `sql(query, mark)` with its own placeholder and hands the rows it read
(one more than the page) to `page`, which bounds what each listed session carries
(`listed`: a large metadata is cut, with a marker, and read whole by get_session). The cursor is the position after a page's last
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
from dataclasses import replace
from typing import Any

from ..errors import InvalidInput
from ..model import Page, Session
from .commands import ListSessions

_ACTIVE = "coalesce(last_activity_at, started_at)"
#: A listed session's metadata is at most this many bytes of JSON: a page of 50 sessions
#: stays small whatever their metadata holds (each may hold MessageLimits.max_metadata_bytes).
LISTED_METADATA_BYTES = 4096
#: Past LISTED_METADATA_BYTES, the values kept in a listing are those this short as JSON
#: (labels such as a project path, a title, an original id); the others are cut.
LISTED_VALUE_BYTES = 256
#: The key of the marker a listing puts in a metadata it cut: the keys cut, the bytes of
#: the whole metadata, and the call that reads it whole.
METADATA_CUT = "sessiondb_cut"


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
    return Page([listed(row) for row in rows], encode(rows[-1]) if more else None)


def _json_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def listed(session: Session) -> Session:
    """`session` as a listing shows it: a metadata past LISTED_METADATA_BYTES keeps its
    short values only, and says under METADATA_CUT what was cut and how to read it."""
    size = _json_size(session.metadata)
    if size <= LISTED_METADATA_BYTES:
        return session
    kept: dict[str, Any] = {}
    cut: list[str] = []
    room = LISTED_METADATA_BYTES // 2  # what the kept values may take; the marker takes the rest
    for key in sorted(session.metadata):
        value = session.metadata[key]
        value_size = _json_size(key) + _json_size(value)
        if value_size <= LISTED_VALUE_BYTES and value_size <= room and key != METADATA_CUT:
            kept[key] = value
            room -= value_size
        else:
            cut.append(key)
    # The marker names at most 16 keys, each by at most 64 characters: keys can be long too.
    names = [key[:64] + ("…" if len(key) > 64 else "") for key in cut[:16]]
    if len(cut) > 16:
        names.append(f"... {len(cut) - 16} more")
    kept[METADATA_CUT] = {"keys": names, "bytes": size,
                          "read": f"the session's metadata is cut in listings: get the session ({session.id!r}) to read it"}
    return replace(session, metadata=kept)


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
