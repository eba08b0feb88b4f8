"""The sessiondb export format: its versioned column lists and the validation of its records.

The format (version 2) is one JSON object per line:

    {"type": "header", "format": "sessiondb-export", "version": 2, "exported_at": ..., "generator": ..., "profile": ...}
    {"type": "session", "session": {every column of the session row}}
    {"type": "message", "message": {every column of a message row}}     every state, commit order
    {"type": "usage", "usage": {every column of a usage row}}
    {"type": "turn", "turn": {every column of a turn row}}              in the order they began
    {"type": "end", "session_id": "...", "messages": N, "usage": K, "turns": T}
    ... the next session ...

Version 2 added the turn records (and the end record's `turns` count); a version-1 file
(no turns) is still read, and a turn record in one is refused. The version was raised so
that an older sessiondb refuses a file holding turns by its header, instead of failing
on its first turn record halfway through.

The columns are listed here, explicitly and for this version, not read from a backend's
tables: every backend writes and reads exactly these. Columns holding JSON (session
metadata, message parts and tool calls) are written as JSON values rather than strings,
and flags as booleans; everything else is the stored value. The `end` record closes a
session, so a file cut short is recognised as truncated.

Import validates every record of a session before anything of it is written
(`read_groups`); a backend then stores each validated `SessionGroup` in one transaction.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from . import guidance
from .errors import InvalidInput, SessionDBError
from .model import MessageLimits, dump_json
from .inputs import (
    check_count, check_label, check_metadata, check_session_id, check_stored_time, clean_title, prepare_message,
)

FORMAT = "sessiondb-export"
VERSION = 2
READABLE = (1, 2)  # the versions import reads


class ImportRejected(InvalidInput):
    """A record of an import was refused; `line` is its line (1-based)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # TEXT, INTEGER or REAL
    notnull: bool = False
    required: bool = False  # a record must give it (NOT NULL without a default)


def _columns_of(*columns: Column) -> dict[str, Column]:
    return {c.name: c for c in columns}


_TEXT, _INT, _REAL = "TEXT", "INTEGER", "REAL"

#: The columns, in the order records carry them (version 1 had no turns).
COLUMNS: dict[str, dict[str, Column]] = {
    "sessions": _columns_of(
        Column("id", _TEXT, True, True), Column("source", _TEXT, True, True), Column("profile", _TEXT),
        Column("session_key", _TEXT), Column("user_id", _TEXT), Column("chat_id", _TEXT),
        Column("chat_type", _TEXT), Column("thread_id", _TEXT), Column("title", _TEXT), Column("model", _TEXT),
        Column("parent_session_id", _TEXT), Column("started_at", _REAL, True, True), Column("ended_at", _REAL),
        Column("end_reason", _TEXT), Column("last_activity_at", _REAL), Column("message_count", _INT, True),
        Column("tool_call_count", _INT, True), Column("pinned", _INT, True), Column("archived", _INT, True),
        Column("hidden", _INT, True), Column("metadata", _TEXT, True), Column("parent_relation", _TEXT),
    ),
    "messages": _columns_of(
        Column("id", _INT), Column("session_id", _TEXT, True, True), Column("uid", _TEXT, True, True),
        Column("seq", _INT, True, True), Column("role", _TEXT, True, True), Column("content", _TEXT),
        Column("parts", _TEXT), Column("tool_calls", _TEXT), Column("tool_call_id", _TEXT),
        Column("tool_name", _TEXT), Column("reasoning", _TEXT), Column("finish_reason", _TEXT),
        Column("token_count", _INT), Column("timestamp", _REAL, True, True), Column("display_kind", _TEXT),
        Column("state", _TEXT, True),
    ),
    "usage": _columns_of(
        Column("session_id", _TEXT, True, True), Column("model", _TEXT, True, True),
        Column("provider", _TEXT, True), Column("task", _TEXT, True), Column("input_tokens", _INT, True),
        Column("output_tokens", _INT, True), Column("cache_read_tokens", _INT, True),
        Column("cache_write_tokens", _INT, True), Column("reasoning_tokens", _INT, True),
        Column("cost_usd", _REAL, True), Column("calls", _INT, True),
    ),
    "turns": _columns_of(
        Column("id", _TEXT, True, True), Column("session_id", _TEXT, True, True), Column("user_uid", _TEXT),
        Column("cwd", _TEXT), Column("started_at", _REAL, True, True), Column("ended_at", _REAL),
        Column("outcome", _TEXT), Column("reason", _TEXT), Column("detail", _TEXT), Column("receipts", _TEXT, True),
        Column("continued_by", _TEXT),
    ),
}
TABLES = tuple(COLUMNS)
JSON_COLUMNS = {"sessions": frozenset({"metadata"}), "messages": frozenset({"parts", "tool_calls"}),
                "usage": frozenset(), "turns": frozenset({"receipts"})}
BOOL_COLUMNS = {"sessions": frozenset({"pinned", "archived", "hidden"}), "messages": frozenset(), "usage": frozenset(),
                "turns": frozenset()}
# Text that append stores as given, NUL and half a character included (store/sql.py); everything
# else of type TEXT is a label without either.
FREE_TEXT_COLUMNS = {"sessions": frozenset(), "messages": frozenset({"content", "reasoning", "parts", "tool_calls"}),
                     "usage": frozenset(), "turns": frozenset()}


# --- export -----------------------------------------------------------------------------


def header(profile: str | None, generator: str, now: float) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION, "exported_at": now, "generator": generator,
            "profile": profile}


def encode(table: str, row: Iterable[Any]) -> dict[str, Any]:
    """A stored row (values in COLUMNS order, JSON columns as JSON text) as its record."""
    record = {}
    for name, value in zip(COLUMNS[table], row, strict=True):
        if value is not None and name in JSON_COLUMNS[table]:
            value = json.loads(value)
        elif name in BOOL_COLUMNS[table]:
            value = bool(value)
        record[name] = value
    return record


def end_record(session_id: str, messages: int, usage: int, turns: int) -> dict[str, Any]:
    return {"type": "end", "session_id": session_id, "messages": messages, "usage": usage, "turns": turns}


# --- import: reading and validating -----------------------------------------------------


@dataclass
class SessionGroup:
    """One session of an import, validated: column values ready to insert."""

    line: int  # of its session record
    session: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.session["id"]


def read_groups(records: Iterable[Any], limits: MessageLimits = MessageLimits()) -> Iterator[SessionGroup]:
    """Parse and validate records, yielding each session once all its records are checked.

    Records are JSONL lines (str or bytes) or already-parsed mappings; blank lines are
    skipped. Raises ImportRejected naming the line of the first bad record.
    """
    version = 0  # the header's, once read
    group: SessionGroup | None = None
    uids: set[str] = set()
    line = 0
    for line, raw in enumerate(records, 1):
        record = _parse(raw, line)
        if record is None:
            continue
        if not version:
            version = _check_header(record, line)
            continue
        kind = record.get("type")
        if kind == "session":
            if group is not None:
                raise ImportRejected(line, f"session {group.id} (line {group.line}) has no end record before the next "
                                           "session: the file is truncated or spliced; export it again")
            group = SessionGroup(line, _session(record.get("session"), line, limits))
            uids = set()
        elif kind in ("message", "usage", "turn", "end") and not (kind == "turn" and version == 1):
            if group is None:
                raise ImportRejected(line, f"a {kind} record outside any session (a session record must come first)")
            if kind == "message":
                message = _message(record.get("message"), line, group.id, limits)
                if message["uid"] in uids:
                    raise ImportRejected(line, f"message uid {message['uid']!r} appears twice in session {group.id}")
                uids.add(message["uid"])
                group.messages.append(message)
            elif kind == "usage":
                group.usage.append(_usage(record.get("usage"), line, group.id))
            elif kind == "turn":
                group.turns.append(_turn(record.get("turn"), line, group.id))
            else:
                _check_end(record, group, line, version)
                yield group
                group = None
        else:
            raise ImportRejected(line, f"unknown record type {kind!r} in a version {version} export (expected "
                                       f"session, message, usage{', turn' if version > 1 else ''} or end)")
    if not version:
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


def _check_header(record: dict[str, Any], line: int) -> int:
    if record.get("format") != FORMAT:
        raise ImportRejected(line, f'not a sessiondb export: the first line must be the header {{"format": "{FORMAT}", ...}}')
    version = record.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ImportRejected(line, f"the export header's version must be an integer, not {version!r}")
    if version not in READABLE:
        readable = ", ".join(map(str, READABLE))
        raise ImportRejected(line, f"unknown export format version {version} (this sessiondb reads versions "
                                   f"{readable}); import it with the sessiondb that wrote it, or a newer one")
    return version


def _check_end(record: dict[str, Any], group: SessionGroup, line: int, version: int) -> None:
    if record.get("session_id") != group.id:
        raise ImportRejected(line, f"the end record names session {record.get('session_id')!r}, but session {group.id} "
                                   f"(line {group.line}) is open")
    counts = [("messages", len(group.messages)), ("usage", len(group.usage))]
    if version > 1:
        counts.append(("turns", len(group.turns)))
    for key, have in counts:
        if record.get(key) != have:
            raise ImportRejected(line, f"session {group.id} declares {record.get(key)!r} {key} records but the file "
                                       f"holds {have}: records are missing; export it again")


def _fields(table: str, record: Any, line: int, what: str) -> dict[str, Any]:
    """Check a record's fields against the store's columns; JSON and flags encoded."""
    if not isinstance(record, dict):
        raise ImportRejected(line, f"the {what} record must hold an object, not {type(record).__name__}")
    columns = COLUMNS[table]
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
            if name not in FREE_TEXT_COLUMNS[table] and not _is_unicode(value):
                raise ImportRejected(line, f"the {what}'s {name!r} holds half a character (an unpaired surrogate)")
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
        "TEXT": isinstance(value, str) and (free_text or ("\x00" not in value and _is_unicode(value))),
        "INTEGER": isinstance(value, int) and not isinstance(value, bool),
        "REAL": isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value),
    }.get(column.type, isinstance(value, (str, int, float)) and not isinstance(value, bool))
    if not ok:
        kind = {"TEXT": "text", "INTEGER": "an integer", "REAL": "a number"}.get(column.type, "a value")
        raise ImportRejected(line, f"the {what}'s {column.name!r} must be {kind}, not {value!r}")


def _is_unicode(value: str) -> bool:
    """False for text that holds half a character (a JSON "\\ud800" escape), which only a
    message's text keeps."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _session(record: Any, line: int, limits: MessageLimits) -> dict[str, Any]:
    values = _fields("sessions", record, line, "session")
    try:
        check_session_id(values.get("id"), "the session's 'id'")
        check_label(values.get("source"), "the session's 'source'", required=True)
        check_label(values.get("parent_session_id"), "the session's 'parent_session_id'")
        values["title"] = clean_title(values.get("title"))
        for name in TIME_COLUMNS & set(values):
            check_stored_time(values[name], f"the session's {name!r}")
    except InvalidInput as exc:
        raise ImportRejected(line, str(exc)) from None
    if "metadata" in values:
        metadata = json.loads(values["metadata"])
        if not isinstance(metadata, dict):
            raise ImportRejected(line, "the session's 'metadata' must be an object")
        try:
            check_metadata(metadata, limits, "the session's 'metadata'")
        except InvalidInput as exc:
            raise ImportRejected(line, str(exc)) from None
    for name in ("message_count", "tool_call_count"):
        if values.get(name, 0) < 0:
            raise ImportRejected(line, f"the session's {name!r} must not be negative")
    return values


TIME_COLUMNS = frozenset({"started_at", "ended_at", "last_activity_at"})
MESSAGE_FIELDS = ("uid", "role", "tool_call_id", "tool_name", "reasoning", "finish_reason", "token_count",
                  "timestamp", "display_kind", "state")


def _message(record: Any, line: int, session_id: str, limits: MessageLimits) -> dict[str, Any]:
    """A message record, checked by the rule append applies (prepare_message), so that
    whatever append stored, an import of its export accepts."""
    values = _fields("messages", record, line, "message")
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


def _usage(record: Any, line: int, session_id: str) -> dict[str, Any]:
    values = _fields("usage", record, line, "usage")
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


def _turn(record: Any, line: int, session_id: str) -> dict[str, Any]:
    values = _fields("turns", record, line, "turn")
    if values.setdefault("session_id", session_id) != session_id:
        raise ImportRejected(line, f"the turn belongs to session {values['session_id']!r}, not {session_id}")
    ended = [values.get(name) is not None for name in ("ended_at", "outcome", "reason")]
    if any(ended) and not all(ended):
        raise ImportRejected(line, "a turn gives all of ended_at, outcome and reason, or none (while it runs)")
    if all(ended):
        try:
            outcome = guidance.turn_outcome(values["reason"])
        except InvalidInput as exc:
            raise ImportRejected(line, str(exc)) from None
        if outcome != values["outcome"]:
            raise ImportRejected(line, f"the turn's reason {values['reason']!r} ends a turn as {outcome!r}, "
                                       f"not {values['outcome']!r}")
    values.setdefault("receipts", "[]")
    if not isinstance(json.loads(values["receipts"]), list):
        raise ImportRejected(line, "the turn's 'receipts' must be a list")
    return values


def annotate(exc: SessionDBError, imported: int) -> str:
    """An import error's message, saying what was kept."""
    kept = (f"the {imported} session(s) before it were imported (importing again skips them)"
            if imported else "nothing was imported")
    return f"{exc}; {kept}"
