"""Listing sessions, the same way on every backend: the page, the cursor, what a listed session carries.

store/sessions.py reads one more session than the page (Rows.recent: newest activity
first, ties by id) and hands them to `page`, which bounds what each listed session
carries (`listed`: a large metadata is cut, with a marker, and read whole by
get_session). The cursor is the position after a page's last session (its activity
time and id), opaque to callers; `decode` refuses any other text.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any

from ..errors import InvalidInput
from ..model import Page, Session

#: A listed session's metadata is at most this many bytes of JSON: a page of 50 sessions
#: stays small whatever their metadata holds (each may hold MessageLimits.max_metadata_bytes).
LISTED_METADATA_BYTES = 4096
#: Past LISTED_METADATA_BYTES, the values kept in a listing are those this short as JSON
#: (labels such as a project path, a title, an original id); the others are cut.
LISTED_VALUE_BYTES = 256
#: The key of the marker a listing puts in a metadata it cut: the keys cut, the bytes of
#: the whole metadata, and the call that reads it whole.
METADATA_CUT = "sessiondb_cut"


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
