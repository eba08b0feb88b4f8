"""Export and import rows of the sessiondb export format (sessiondb.formats).

Export reads each session in one REPEATABLE READ transaction (its row, messages and
usage agree) and streams it through a server-side cursor, so memory stays constant
whatever the session's size. Sessions come in creation order, so a parent usually
precedes its children.

Import stores one validated session in one transaction, idempotently: a session already
stored keeps its row, and only the messages (by uid) and usage rows (by model, provider,
task) it lacks are added. Ids are the importing store's; order, uids, seqs, states and
timestamps are kept. Running an interrupted import again completes it.
"""

from __future__ import annotations

from typing import Any, Iterator

import psycopg
from psycopg import sql

from ... import formats
from ...errors import InvalidInput, SessionTooLarge, TitleConflict
from ...formats import SessionGroup
from ...model import ImportOutcome
from . import messages
from .text import from_server, to_server

SESSION_PAGE = 500  # session ids read per query while exporting everything
STREAM_ROWS = 2000  # rows a server-side cursor hands over at a time
INSERT_CHUNK = 500  # rows an import inserts per statement
_TEXT = ("content", "reasoning")  # message columns that may hold NUL (see text.py)
_SELECT = {table: ", ".join(columns) for table, columns in formats.COLUMNS.items()}


def session_page(conn: psycopg.Connection, after: int) -> list[tuple[int, str]]:
    """(creation number, id) of the next sessions after `after`, in creation order."""
    return conn.execute("SELECT created, id FROM sessions WHERE created > %s ORDER BY created LIMIT %s",
                        (after, SESSION_PAGE)).fetchall()


def missing_sessions(conn: psycopg.Connection, session_ids: list[str]) -> list[str]:
    found = {row[0] for row in conn.execute("SELECT id FROM sessions WHERE id = ANY(%s)", (session_ids,))}
    return [sid for sid in session_ids if sid not in found]


def session_records(conn: psycopg.Connection, session_id: str, max_messages: int) -> Iterator[dict[str, Any]]:
    """The records of one session (nothing if it was deleted since it was listed)."""
    row = conn.execute(f"SELECT {_SELECT['sessions']} FROM sessions WHERE id = %s", (session_id,)).fetchone()
    if row is None:
        return
    if max_messages:
        total = conn.execute("SELECT count(*) FROM messages WHERE session_id = %s", (session_id,)).fetchone()[0]
        if total > max_messages:
            raise SessionTooLarge(f"session {session_id} holds {total:,} messages", limit=max_messages, count=total)
    yield {"type": "session", "session": formats.encode("sessions", row)}
    count = 0
    with conn.cursor(name="sessiondb_export") as rows:  # server-side: streamed, never all in memory
        rows.itersize = STREAM_ROWS
        rows.execute(f"SELECT {_SELECT['messages']} FROM messages WHERE session_id = %s ORDER BY id", (session_id,))
        for message in rows:
            count += 1
            record = formats.encode("messages", message)
            record["content"], record["reasoning"] = from_server(record["content"]), from_server(record["reasoning"])
            yield {"type": "message", "message": record}
    usage = conn.execute(f"SELECT {_SELECT['usage']} FROM usage WHERE session_id = %s "
                         "ORDER BY model, provider, task", (session_id,)).fetchall()
    for usage_row in usage:
        yield {"type": "usage", "usage": formats.encode("usage", usage_row)}
    yield formats.end_record(session_id, count, len(usage), 0)  # turns are not kept on a server yet


class _DryRun(Exception):
    """Raised inside an import's savepoint to roll it back after counting."""

    def __init__(self, outcome: ImportOutcome) -> None:
        self.outcome = outcome


def write_group(conn: psycopg.Connection, group: SessionGroup, dry_run: bool) -> ImportOutcome:
    """Store one validated session; with dry_run, roll it back after counting."""
    if group.turns:  # never dropped silently: a server does not keep turn records yet
        raise InvalidInput(f"line {group.line}: session {group.id} has turn records, which a PostgreSQL store "
                           "does not keep yet; import it into a SQLite store")
    if not dry_run:
        return _write_group(conn, group)
    try:
        with conn.transaction():
            raise _DryRun(_write_group(conn, group))
    except _DryRun as done:
        return done.outcome


def _write_group(conn: psycopg.Connection, group: SessionGroup) -> ImportOutcome:
    session = dict(group.session)
    sid = session["id"]
    created = conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (sid,)).fetchone() is None
    detached_from = None
    if created:
        parent = session.get("parent_session_id")
        if parent is not None and not conn.execute("SELECT 1 FROM sessions WHERE id = %s", (parent,)).fetchone():
            session["parent_session_id"], detached_from = None, parent
        if session.get("title") is not None:
            holder = conn.execute("SELECT id FROM sessions WHERE title = %s", (session["title"],)).fetchone()
            if holder is not None:
                raise TitleConflict(
                    f"line {group.line}: session {sid}'s title {session['title']!r} is already used by session "
                    f"{holder[0]} in this store; rename one of them (`sessiondb sessions rename`) and import again")
        _insert(conn, "sessions", [session], "")
    stored = [{**m, **{k: to_server(m[k]) for k in _TEXT if k in m}} for m in group.messages]
    imported = _insert(conn, "messages", stored, "ON CONFLICT (session_id, uid) DO NOTHING")
    usage_imported = _insert(conn, "usage", group.usage, "ON CONFLICT (session_id, model, provider, task) DO NOTHING")
    if not created and imported:
        # The stored row keeps its own fields; its counters take in what was added.
        messages.recount(conn, sid)
        conn.execute("UPDATE sessions SET last_activity_at = greatest(last_activity_at, %s) WHERE id = %s",
                     (group.session.get("last_activity_at") or group.session.get("started_at"), sid))
    return ImportOutcome(created, imported, len(group.messages) - imported, usage_imported,
                         len(group.usage) - usage_imported, detached_from)


def _insert(conn: psycopg.Connection, table: str, rows: list[dict[str, Any]], conflict: str) -> int:
    """Insert rows in order, up to INSERT_CHUNK per statement; how many were new. Column
    names are the export format's (checked on import), quoted as identifiers."""
    new = 0
    start = 0
    while start < len(rows):
        names = list(rows[start])
        end = start + 1
        while end < len(rows) and end - start < INSERT_CHUNK and list(rows[end]) == names:
            end += 1
        row_sql = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(names)))
        statement = sql.SQL("INSERT INTO {}({}) VALUES {} " + conflict).format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, names)),
            sql.SQL(", ").join([row_sql] * (end - start)))
        new += conn.execute(statement, [r[n] for r in rows[start:end] for n in names]).rowcount
        start = end
    return new


def relink(conn: psycopg.Connection, links: list[tuple[str, str]]) -> list[str]:
    """Restore parent links whose parent arrived later in the import; the ids still detached."""
    detached = []
    for child, parent in links:
        if conn.execute("SELECT 1 FROM sessions WHERE id = %s", (parent,)).fetchone():
            conn.execute("UPDATE sessions SET parent_session_id = %s WHERE id = %s AND parent_session_id IS NULL",
                         (parent, child))
        else:
            detached.append(child)
    return detached
