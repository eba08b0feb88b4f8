"""Export and import rows of the sessiondb export format (sessiondb.formats) in SQLite.

Export reads each session in one read transaction (a consistent snapshot of its row,
messages, usage and turns) and streams it row by row: memory stays constant whatever the size.
Sessions come in creation order (rowid), so a parent usually precedes its children.

Import writes one validated session (formats.SessionGroup) in one unit of work: a session
already stored keeps its row, and only the messages (by uid) and usage rows (by model,
provider, task) it lacks are added. Message ids are assigned by the importing store; the
order, uids, seqs, states and timestamps are kept.
"""

from __future__ import annotations

from typing import Any, Iterator

import apsw

from ... import formats
from ...errors import SessionTooLarge, TitleConflict
from ...formats import SessionGroup
from ...model import ImportOutcome

SESSION_PAGE = 500  # session ids read per listing query while exporting everything
_SELECT = {table: ", ".join(columns) for table, columns in formats.COLUMNS.items()}


# --- export -----------------------------------------------------------------------------


def session_page(conn: apsw.Connection, after: int, size: int = SESSION_PAGE) -> list[tuple[int, str]]:
    """(rowid, id) of the next `size` sessions after rowid `after`, in creation order."""
    return conn.execute("SELECT rowid, id FROM sessions WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, size)).fetchall()


def missing_sessions(conn: apsw.Connection, session_ids: list[str]) -> list[str]:
    return [sid for sid in session_ids if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()]


def session_records(conn: apsw.Connection, session_id: str, max_messages: int = 0) -> Iterator[dict[str, Any]]:
    """The records of one session (nothing if it was deleted since it was listed)."""
    row = conn.execute(f"SELECT {_SELECT['sessions']} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return
    if max_messages:
        total = conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]
        if total > max_messages:
            raise SessionTooLarge(f"session {session_id} holds {total:,} messages", limit=max_messages, count=total)
    yield {"type": "session", "session": formats.encode("sessions", row)}
    count = 0
    for row in conn.execute(f"SELECT {_SELECT['messages']} FROM messages WHERE session_id = ? ORDER BY id", (session_id,)):
        count += 1
        yield {"type": "message", "message": formats.encode("messages", row)}
    usage_count = 0
    for row in conn.execute(
        f"SELECT {_SELECT['usage']} FROM usage WHERE session_id = ? ORDER BY model, provider, task", (session_id,)
    ):
        usage_count += 1
        yield {"type": "usage", "usage": formats.encode("usage", row)}
    turn_count = 0
    for row in conn.execute(f"SELECT {_SELECT['turns']} FROM turns WHERE session_id = ? ORDER BY seq", (session_id,)):
        turn_count += 1
        yield {"type": "turn", "turn": formats.encode("turns", row)}
    yield formats.end_record(session_id, count, usage_count, turn_count)


# --- import: writing --------------------------------------------------------------------


def write_group(conn: apsw.Connection, group: SessionGroup, dry_run: bool) -> ImportOutcome:
    """Store one validated session (a unit of work); with dry_run, roll it back after counting."""
    if not dry_run:
        return _write_group(conn, group)
    conn.execute("SAVEPOINT import_dry_run")
    try:
        return _write_group(conn, group)
    finally:
        conn.execute("ROLLBACK TO import_dry_run; RELEASE import_dry_run")


def _write_group(conn: apsw.Connection, group: SessionGroup) -> ImportOutcome:
    session = dict(group.session)
    sid = session["id"]
    created = not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()
    detached_from = None
    if created:
        parent = session.get("parent_session_id")
        if parent is not None and not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
            session["parent_session_id"], detached_from = None, parent
        if session.get("title") is not None:
            holder = conn.execute("SELECT id FROM sessions WHERE title = ?", (session["title"],)).fetchone()
            if holder is not None:
                raise TitleConflict(
                    f"line {group.line}: session {sid}'s title {session['title']!r} is already used by session "
                    f"{holder[0]} in this store; rename one of them (`sessiondb sessions rename`) and import again"
                )
        _insert(conn, "sessions", session, "")
    imported = 0
    for message in group.messages:
        if _insert(conn, "messages", message, "ON CONFLICT(session_id, uid) DO NOTHING"):
            imported += 1
    usage_imported = sum(
        1 for row in group.usage if _insert(conn, "usage", row, "ON CONFLICT(session_id, model, provider, task) DO NOTHING")
    )
    # A turn id is unique in the store: one already stored (here or elsewhere) is skipped.
    turns_imported = sum(1 for row in group.turns if _insert(conn, "turns", row, "ON CONFLICT(id) DO NOTHING"))
    if not created and imported:
        # The stored row keeps its own fields; its counters take in what was added.
        conn.execute(
            "UPDATE sessions SET "
            "message_count = (SELECT count(*) FROM messages WHERE session_id = ?1 AND state = 'active'), "
            "tool_call_count = (SELECT coalesce(sum(json_array_length(tool_calls)), 0) FROM messages "
            "WHERE session_id = ?1 AND state = 'active'), "
            "last_activity_at = max(coalesce(last_activity_at, ?2), ?2) WHERE id = ?1",
            (sid, group.session.get("last_activity_at") or group.session.get("started_at")),
        )
    return ImportOutcome(created, imported, len(group.messages) - imported, usage_imported,
                   len(group.usage) - usage_imported, detached_from, turns_imported,
                   len(group.turns) - turns_imported)


def _insert(conn: apsw.Connection, table: str, values: dict[str, Any], conflict: str) -> bool:
    # Column names come from the export format's own lists (formats.COLUMNS); values are bound.
    names = list(values)
    sql = f"INSERT INTO {table}({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) {conflict} RETURNING 1"
    return conn.execute(sql, [values[n] for n in names]).fetchone() is not None


def relink(conn: apsw.Connection, links: list[tuple[str, str]]) -> list[str]:
    """Restore parent links whose parent arrived later in the import; the ids still detached."""
    detached = []
    for child, parent in links:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (parent,)).fetchone():
            conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NULL",
                         (parent, child))
        else:
            detached.append(child)
    return detached
