"""Sessions on every backend: create, read, list, change, delete, find by what a person
types, and the store's counts for stats.

Units of work over `Rows` (store/rows.py). What the lineage, append and compaction rules
need of a session's row is here too (`get`, `require`, `create`); flags over a lineage are
store/lineage.py's. A change reads the session's row locked first, so two processes
changing one session take turns while different sessions never wait on each other.

A person names a session (`find`) by its exact id, its exact title (or the title in
another case of ASCII letters, when only one session has it), or a unique prefix of its
id (ids start with their creation time, so a few characters usually suffice).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..errors import InvalidInput, NotFound, SessionExists, TitleConflict
from ..inputs import patched_metadata
from ..model import Page, Session
from . import listing, retention
from .commands import EndSession, ListSessions, PatchMetadata, ReopenSession, SessionChange, SetTitle
from .rows import Row, Rows, Taken, folded, one_of, starting

#: The columns a new session's row is given; the others take their defaults.
INSERTED = ("id", "source", "profile", "session_key", "user_id", "chat_id", "chat_type", "thread_id",
            "title", "model", "parent_session_id", "started_at", "metadata", "parent_relation", "hidden")
AMBIGUOUS_SHOWN = 5  # candidates named when an id prefix matches several sessions


def from_row(row: Row) -> Session:
    return Session(**{**row, "pinned": bool(row["pinned"]), "archived": bool(row["archived"]),
                      "hidden": bool(row["hidden"]), "metadata": json.loads(row["metadata"])})


def missing(session_id: str) -> NotFound:
    return NotFound(f"no session {session_id!r} in this store")


def get(rows: Rows, session_id: str, *, lock: bool = False) -> Session:
    found = rows.select("sessions", {"id": session_id}, lock=lock)
    if not found:
        raise missing(session_id)
    return from_row(found[0])


def get_many(rows: Rows, session_ids: list[str]) -> dict[str, Session]:
    """The sessions of `session_ids` that exist, by id in the order asked; one statement."""
    found = {row["id"]: row for row in rows.select("sessions", {"id": one_of(session_ids)})} if session_ids else {}
    return {sid: from_row(found[sid]) for sid in session_ids if sid in found}


def require(rows: Rows, session_id: str) -> None:
    if not rows.select("sessions", {"id": session_id}, columns=("id",)):
        raise missing(session_id)


def create(rows: Rows, values: dict[str, Any]) -> Session:
    """Insert a session's row (`values`: INSERTED's columns); SessionExists under a stored
    id, TitleConflict under a title another session has, NotFound for a missing parent.

    The same row created again (a unit of work run again after its commit landed but its
    acknowledgement did not) is returned as stored."""
    if values.get("parent_session_id") is not None:
        require(rows, values["parent_session_id"])
    try:
        row = {name: values[name] for name in INSERTED if name in values}
        rows.insert("sessions", [{**row, "hidden": int(row.get("hidden", False))}])  # a flag is stored as 0 or 1
    except Taken as taken:
        if taken.constraint == "key":
            stored = get(rows, values["id"])
            if _same_creation(stored, values):
                return stored
            raise SessionExists(
                f"a session with id {values['id']!r} already exists; give the new session its own id") from None
        raise _title_taken(rows, values["title"]) from None
    return get(rows, values["id"])


def _same_creation(stored: Session, values: dict[str, Any]) -> bool:
    return (stored.started_at, stored.source, stored.title, stored.parent_session_id) == (
        values["started_at"], values["source"], values.get("title"), values.get("parent_session_id"))


def _title_taken(rows: Rows, title: str) -> TitleConflict:
    holder = rows.select("sessions", {"title": title}, columns=("id",))[0]["id"]
    return TitleConflict(f"the title {title!r} is already used by session {holder}; choose another")


def change(rows: Rows, session_id: str, change: SessionChange) -> Session:
    """Apply one change to the session's row and return the row as it now is."""
    current = get(rows, session_id, lock=True)
    this = {"id": session_id}
    match change:
        case EndSession(reason=reason, now=now):  # the first end time is kept
            ended = now if current.ended_at is None else current.ended_at
            rows.update("sessions", this, set={"ended_at": ended, "end_reason": reason})
        case ReopenSession():
            rows.update("sessions", this, set={"ended_at": None, "end_reason": None})
        case SetTitle(title=title):
            try:
                rows.update("sessions", this, set={"title": title})
            except Taken:
                raise _title_taken(rows, title) from None
        case PatchMetadata(patch=patch, max_bytes=max_bytes):  # not user activity
            rows.update("sessions", this, set={"metadata": patched_metadata(current.metadata, patch, max_bytes)})
    return get(rows, session_id)


def delete(rows: Rows, session_id: str, together: Iterable[str] = ()) -> list[str]:
    """Delete the session with its messages, usage, turns and routing entries (its children
    stay, parentless), and the sessions `together` names with it (stored ones, locked by
    the caller); Conflict, nothing deleted, when a legal hold covers any of them. The ids
    deleted: `session_id`, then the others in id order."""
    doomed = sorted({session_id, *together})
    retention.refuse_held(rows, set(doomed))  # a session not stored is held by nothing
    if not retention.remove_sessions(rows, doomed):
        raise missing(session_id)
    return [session_id, *(sid for sid in doomed if sid != session_id)]


def listed(rows: Rows, query: ListSessions) -> Page:
    """One page of the listing (store/listing.py: its cursor and what a listed session carries)."""
    where: dict[str, Any] = {}
    if query.source is not None:
        where["source"] = query.source
    if query.user_id is not None:
        where["user_id"] = query.user_id
    if not query.include_archived:
        where["archived"] = 0
    if not query.include_hidden:
        where["hidden"] = 0
    if query.pinned is not None:
        where["pinned"] = int(query.pinned)
    after = None if query.cursor is None else listing.decode(query.cursor)
    found = rows.recent(where, since=query.since, until=query.until, after=after, limit=query.limit + 1)
    return listing.page([from_row(row) for row in found], query.limit)


def find(rows: Rows, ref: str, title: str | None) -> Session:
    """The session whose id is `ref`, else whose title is `title`, else whose id starts with `ref`."""
    found = rows.select("sessions", {"id": ref})
    if not found and title is not None:
        found = rows.select("sessions", {"title": title})
        if not found:  # the title in another case, if only one session has it
            found = rows.select("sessions", {"title": folded(title)}, limit=2)
            found = found if len(found) == 1 else []
    if found:
        return from_row(found[0])
    found = rows.select("sessions", {"id": starting(ref)}, order=("id",), limit=AMBIGUOUS_SHOWN + 1)
    if len(found) == 1:
        return from_row(found[0])
    if not found:
        raise NotFound(
            f"no session has the id, id prefix or title {ref!r}; list sessions with `sessiondb sessions list`")
    shown = ", ".join(row["id"] for row in found[:AMBIGUOUS_SHOWN])
    more = " and more" if len(found) > AMBIGUOUS_SHOWN else ""
    raise InvalidInput(f"{ref!r} is the start of several session ids ({shown}{more}); give more of the id")


def counts(rows: Rows) -> dict[str, int | float]:
    """The store's counts for stats: sessions by flag, messages by state, usage totals."""
    flags = rows.count("sessions", sums=("pinned", "archived", "hidden"))[None]
    by_state = {state: row["count"] for state, row in rows.count("messages", by="state").items()}
    spent = rows.count("usage", sums=("calls", "cost_usd"))[None]
    return {
        "sessions": flags["count"], "pinned": int(flags["pinned"]), "archived": int(flags["archived"]),
        "hidden": int(flags["hidden"]), "messages": by_state.get("active", 0),
        "compacted_messages": by_state.get("compacted", 0), "rewound_messages": by_state.get("rewound", 0),
        "usage_calls": int(spent["calls"]), "cost_usd": round(float(spent["cost_usd"]), 10),
    }
