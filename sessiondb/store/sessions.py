"""Session rows over `Rows` (store/rows.py), on every backend: read one, create one.

What the lineage, append and compaction rules need of a session's row; the rest of the
sessions concept (change, delete, list, find) is still each backend's.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import NotFound, SessionExists, TitleConflict
from ..model import Session
from .rows import Row, Rows, Taken

#: The columns a new session's row is given; the others take their defaults.
INSERTED = ("id", "source", "profile", "session_key", "user_id", "chat_id", "chat_type", "thread_id",
            "title", "model", "parent_session_id", "started_at", "metadata", "parent_relation")


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


def require(rows: Rows, session_id: str) -> None:
    if not rows.select("sessions", {"id": session_id}, columns=("id",)):
        raise missing(session_id)


def create(rows: Rows, values: dict[str, Any]) -> Session:
    """Insert a session's row (`values`: INSERTED's columns); SessionExists under a stored
    id, TitleConflict under a title another session has, NotFound for a missing parent."""
    if values.get("parent_session_id") is not None:
        require(rows, values["parent_session_id"])
    try:
        rows.insert("sessions", [{name: values[name] for name in INSERTED if name in values}])
    except Taken as taken:
        if taken.constraint == "sessions_title":
            holder = rows.select("sessions", {"title": values["title"]}, columns=("id",))[0]["id"]
            raise TitleConflict(
                f"the title {values['title']!r} is already used by session {holder}; choose another") from None
        raise SessionExists(
            f"a session with id {values['id']!r} already exists; give the new session its own id") from None
    return get(rows, values["id"])


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
