"""Lossless export and import of sessions, as sessiondb JSONL.

The format (version 1) is one JSON object per line:

    {"type": "header", "format": "sessiondb-export", "version": 1, "exported_at": ..., "generator": ..., "profile": ...}
    {"type": "session", "session": {every column of the session row}}
    {"type": "message", "message": {every column of a message row}}     every state, commit order
    {"type": "usage", "usage": {every column of a usage row}}
    {"type": "end", "session_id": "...", "messages": N, "usage": K}
    ... the next session ...

Columns holding JSON (session metadata, message parts and tool calls) are written as JSON
values rather than strings, and flags as booleans; everything else is the stored value.
Sessions come in creation order (rowid), so a parent usually precedes its children; the
`end` record closes a session, so a file cut short is recognised as truncated.

Export reads each session in one read transaction (a consistent snapshot of its row,
messages and usage) and streams it row by row: memory stays constant whatever the size.

Import validates every record of a session before anything of it is written, then writes
the session in one unit of work: a session already stored keeps its row, and only the
messages (by uid) and usage rows (by model, provider, task) it lacks are added. Message ids
are assigned by the importing store; the order, uids, seqs, states and timestamps are kept.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

import apsw

from ...errors import InvalidInput, SessionDBError, TitleConflict
from ...model import (
    MessageLimits, check_count, check_label, check_session_id, check_stored_time, clean_title, dump_json, prepare_message,
)

FORMAT = "sessiondb-export"
VERSION = 1
TABLES = ("sessions", "messages", "usage")
JSON_COLUMNS = {"sessions": frozenset({"metadata"}), "messages": frozenset({"parts", "tool_calls"}), "usage": frozenset()}
BOOL_COLUMNS = {"sessions": frozenset({"pinned", "archived", "hidden"}), "messages": frozenset(), "usage": frozenset()}
# Text that append stores as given, NUL bytes included; everything else of type TEXT is a label without NUL.
FREE_TEXT_COLUMNS = {"sessions": frozenset(), "messages": frozenset({"content", "reasoning"}), "usage": frozenset()}
SESSION_PAGE = 500  # session ids read per listing query while exporting everything


class ImportRejected(InvalidInput):
    """A record of an import was refused; `line` is its line (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # TEXT, INTEGER or REAL (the tables are STRICT)
    notnull: bool
    required: bool  # NOT NULL without a default: a record must give it


Schema = dict[str, dict[str, Column]]


def schema(conn: apsw.Connection) -> Schema:
    """The columns of the tables an export carries, as this store has them."""
    out: Schema = {}
    for table in TABLES:
        out[table] = {
            name: Column(name, decl.upper(), bool(notnull),
                         bool(notnull) and default is None and not (pk and decl.upper() == "INTEGER"))
            for _cid, name, decl, notnull, default, pk in conn.execute(f"PRAGMA table_info({table})")
        }
    return out


# --- export -----------------------------------------------------------------------------


def header(profile: str | None, generator: str, now: float) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION, "exported_at": now, "generator": generator,
            "profile": profile}


def session_page(conn: apsw.Connection, after: int, size: int = SESSION_PAGE) -> list[tuple[int, str]]:
    """(rowid, id) of the next `size` sessions after rowid `after`, in creation order."""
    return conn.execute("SELECT rowid, id FROM sessions WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, size)).fetchall()


def missing_sessions(conn: apsw.Connection, session_ids: list[str]) -> list[str]:
    return [sid for sid in session_ids if not conn.execute("SELECT 1 FROM sessions WHERE id = ?", (sid,)).fetchone()]


def message_total(conn: apsw.Connection, session_id: str) -> int:
    return conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]


def session_records(conn: apsw.Connection, tables: Schema, session_id: str) -> Iterator[dict[str, Any]]:
    """The records of one session (nothing if it was deleted since it was listed)."""
    cols = list(tables["sessions"])
    row = conn.execute(f"SELECT {', '.join(cols)} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        return
    yield {"type": "session", "session": _encode("sessions", cols, row)}
    count = 0
    cols = list(tables["messages"])
    for row in conn.execute(f"SELECT {', '.join(cols)} FROM messages WHERE session_id = ? ORDER BY id", (session_id,)):
        count += 1
        yield {"type": "message", "message": _encode("messages", cols, row)}
    usage_count = 0
    cols = list(tables["usage"])
    for row in conn.execute(
        f"SELECT {', '.join(cols)} FROM usage WHERE session_id = ? ORDER BY model, provider, task", (session_id,)
    ):
        usage_count += 1
        yield {"type": "usage", "usage": _encode("usage", cols, row)}
    yield {"type": "end", "session_id": session_id, "messages": count, "usage": usage_count}


def _encode(table: str, cols: list[str], row: tuple[Any, ...]) -> dict[str, Any]:
    record = {}
    for name, value in zip(cols, row):
        if value is not None and name in JSON_COLUMNS[table]:
            value = json.loads(value)
        elif name in BOOL_COLUMNS[table]:
            value = bool(value)
        record[name] = value
    return record


# --- import: reading and validating -----------------------------------------------------


@dataclass
class SessionGroup:
    """One session of an import, validated: column values ready to insert."""

    line: int  # of its session record
    session: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session["id"]


def read_groups(records: Iterable[Any], tables: Schema, limits: MessageLimits = MessageLimits()) -> Iterator[SessionGroup]:
    """Parse and validate records, yielding each session once all its records are checked.

    Records are JSONL lines (str or bytes) or already-parsed mappings; blank lines are
    skipped. Raises ImportRejected naming the line of the first bad record.
    """
    seen_header = False
    group: SessionGroup | None = None
    uids: set[str] = set()
    line = 0
    for line, raw in enumerate(records, 1):
        record = _parse(raw, line)
        if record is None:
            continue
        if not seen_header:
            _check_header(record, line)
            seen_header = True
            continue
        kind = record.get("type")
        if kind == "session":
            if group is not None:
                raise ImportRejected(line, f"session {group.id} (line {group.line}) has no end record before the next "
                                           "session: the file is truncated or spliced; export it again")
            group = SessionGroup(line, _session(record.get("session"), tables, line))
            uids = set()
        elif kind in ("message", "usage", "end"):
            if group is None:
                raise ImportRejected(line, f"a {kind} record outside any session (a session record must come first)")
            if kind == "message":
                message = _message(record.get("message"), tables, line, group.id, limits)
                if message["uid"] in uids:
                    raise ImportRejected(line, f"message uid {message['uid']!r} appears twice in session {group.id}")
                uids.add(message["uid"])
                group.messages.append(message)
            elif kind == "usage":
                group.usage.append(_usage(record.get("usage"), tables, line, group.id))
            else:
                _check_end(record, group, line)
                yield group
                group = None
        else:
            raise ImportRejected(line, f"unknown record type {kind!r} (expected session, message, usage or end)")
    if not seen_header:
        raise ImportRejected(max(line, 1), "the file holds no records: it is empty, not a sessiondb export")
    if group is not None:
        raise ImportRejected(line + 1, f"the file ends inside session {group.id} (line {group.line}) before its end "
                                       "record: it is truncated; export it again")


def _parse(raw: Any, line: int) -> dict[str, Any] | None:
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ImportRejected(line, "not UTF-8 text") from None
    if not isinstance(raw, str):
        raise ImportRejected(line, f"expected a JSON line or a mapping, not {type(raw).__name__}")
    if not raw.strip():
        return None
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise ImportRejected(line, f"not valid JSON, the line is truncated or damaged ({exc})") from None
    if not isinstance(value, dict):
        raise ImportRejected(line, f"expected a JSON object, found {type(value).__name__}")
    return value


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number sessiondb stores")


def _check_header(record: dict[str, Any], line: int) -> None:
    if record.get("format") != FORMAT:
        raise ImportRejected(line, f'not a sessiondb export: the first line must be the header {{"format": "{FORMAT}", ...}}')
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ImportRejected(line, f"the export header's version must be an integer, not {version!r}")
    if version != VERSION:
        raise ImportRejected(line, f"unknown export format version {version} (this sessiondb reads version {VERSION}); "
                                   "import it with the sessiondb that wrote it, or a newer one")


def _check_end(record: dict[str, Any], group: SessionGroup, line: int) -> None:
    if record.get("session_id") != group.id:
        raise ImportRejected(line, f"the end record names session {record.get('session_id')!r}, but session {group.id} "
                                   f"(line {group.line}) is open")
    for key, have in (("messages", len(group.messages)), ("usage", len(group.usage))):
        if record.get(key) != have:
            raise ImportRejected(line, f"session {group.id} declares {record.get(key)!r} {key} records but the file "
                                       f"holds {have}: records are missing; export it again")


def _columns(table: str, record: Any, tables: Schema, line: int, what: str) -> dict[str, Any]:
    """Check a record's fields against the store's columns; JSON and flags encoded."""
    if not isinstance(record, dict):
        raise ImportRejected(line, f"the {what} record must hold an object, not {type(record).__name__}")
    columns = tables[table]
    unknown = sorted(set(record) - set(columns))
    if unknown:
        raise ImportRejected(line, f"unknown {what} field(s) {', '.join(map(repr, unknown))}")
    out: dict[str, Any] = {}
    for name, column in columns.items():
        if name not in record:
            if column.required:
                raise ImportRejected(line, f"the {what} has no {name!r}")
            continue
        value = record[name]
        if value is None:
            if column.notnull:
                raise ImportRejected(line, f"the {what}'s {name!r} must not be null")
        elif name in JSON_COLUMNS[table]:
            value = _json_text(value, name, line, what)
        elif name in BOOL_COLUMNS[table]:
            if not isinstance(value, bool):
                raise ImportRejected(line, f"the {what}'s {name!r} must be true or false, not {value!r}")
            value = int(value)
        else:
            _check_type(value, column, line, what, free_text=name in FREE_TEXT_COLUMNS[table])
        out[name] = value
    return out


def _json_text(value: Any, name: str, line: int, what: str) -> str:
    try:
        return dump_json(value, f"the {what}'s {name!r}")
    except InvalidInput as exc:
        raise ImportRejected(line, str(exc)) from None


def _check_type(value: Any, column: Column, line: int, what: str, *, free_text: bool = False) -> None:
    ok = {
        "TEXT": isinstance(value, str) and (free_text or "\x00" not in value) and _is_unicode(value),
        "INTEGER": isinstance(value, int) and not isinstance(value, bool),
        "REAL": isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
    }.get(column.type, isinstance(value, (str, int, float)) and not isinstance(value, bool))
    if not ok:
        kind = {"TEXT": "text", "INTEGER": "an integer", "REAL": "a number"}.get(column.type, "a value")
        raise ImportRejected(line, f"the {what}'s {column.name!r} must be {kind}, not {value!r}")


def _is_unicode(value: str) -> bool:
    """False for text SQLite cannot store: a lone surrogate (a JSON "\\ud800" escape)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _session(record: Any, tables: Schema, line: int) -> dict[str, Any]:
    values = _columns("sessions", record, tables, line, "session")
    try:
        check_session_id(values.get("id"), "the session's 'id'")
        check_label(values.get("source"), "the session's 'source'", required=True)
        check_label(values.get("parent_session_id"), "the session's 'parent_session_id'")
        values["title"] = clean_title(values.get("title"))
        for name in TIME_COLUMNS & set(values):
            check_stored_time(values[name], f"the session's {name!r}")
    except InvalidInput as exc:
        raise ImportRejected(line, str(exc)) from None
    if "metadata" in values and not isinstance(json.loads(values["metadata"]), dict):
        raise ImportRejected(line, "the session's 'metadata' must be an object")
    for name in ("message_count", "tool_call_count"):
        if values.get(name, 0) < 0:
            raise ImportRejected(line, f"the session's {name!r} must not be negative")
    return values


TIME_COLUMNS = frozenset({"started_at", "ended_at", "last_activity_at"})
MESSAGE_FIELDS = ("uid", "role", "tool_call_id", "tool_name", "reasoning", "finish_reason", "token_count",
                  "timestamp", "display_kind", "state")


def _message(record: Any, tables: Schema, line: int, session_id: str, limits: MessageLimits) -> dict[str, Any]:
    """A message record, checked by the rule append applies (prepare_message), so that
    whatever append stored, an import of its export accepts."""
    values = _columns("messages", record, tables, line, "message")
    values.pop("id", None)  # ids are the importing store's to assign
    if values.setdefault("session_id", session_id) != session_id:
        raise ImportRejected(line, f"the message belongs to session {values['session_id']!r}, not {session_id}")
    given = {name: values[name] for name in MESSAGE_FIELDS if name in values}
    parts, calls = values.get("parts"), values.get("tool_calls")
    given["content"] = json.loads(parts) if parts is not None else values.get("content")
    if calls is not None:
        given["tool_calls"] = json.loads(calls)
    try:
        checked = prepare_message(given, limits=limits, where="the message")
    except InvalidInput as exc:
        raise ImportRejected(line, str(exc)) from None
    values["content"] = checked.content  # for parts, the text derived from them, as append stores it
    return values


def _usage(record: Any, tables: Schema, line: int, session_id: str) -> dict[str, Any]:
    values = _columns("usage", record, tables, line, "usage")
    if values.setdefault("session_id", session_id) != session_id:
        raise ImportRejected(line, f"the usage row belongs to session {values['session_id']!r}, not {session_id}")
    try:
        for name, value in values.items():
            if isinstance(value, int) and not isinstance(value, bool):
                check_count(value, f"the usage row's {name!r}")
            elif isinstance(value, float) and value < 0:
                raise InvalidInput(f"the usage row's {name!r} must not be negative")
    except InvalidInput as exc:
        raise ImportRejected(line, str(exc)) from None
    return values


# --- import: writing --------------------------------------------------------------------


@dataclass
class Outcome:
    created: bool
    messages_imported: int
    messages_skipped: int
    usage_imported: int
    usage_skipped: int
    detached_from: str | None  # the parent that was not there, when the link was cleared


def write_group(conn: apsw.Connection, group: SessionGroup, dry_run: bool) -> Outcome:
    """Store one validated session (a unit of work); with dry_run, roll it back after counting."""
    if not dry_run:
        return _write_group(conn, group)
    conn.execute("SAVEPOINT import_dry_run")
    try:
        return _write_group(conn, group)
    finally:
        conn.execute("ROLLBACK TO import_dry_run; RELEASE import_dry_run")


def _write_group(conn: apsw.Connection, group: SessionGroup) -> Outcome:
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
    return Outcome(created, imported, len(group.messages) - imported, usage_imported,
                   len(group.usage) - usage_imported, detached_from)


def _insert(conn: apsw.Connection, table: str, values: dict[str, Any], conflict: str) -> bool:
    # Column names were checked against the table's own columns (schema()); values are bound.
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


def annotate(exc: SessionDBError, imported: int) -> str:
    """An import error's message, saying what was kept."""
    kept = (f"the {imported} session(s) before it were imported (importing again skips them)"
            if imported else "nothing was imported")
    return f"{exc}; {kept}"
