"""The `llm` command's `logs.db`, in both of the schemas it has written.

The older schema logs one row per prompt in `responses` (prompt, system, response,
model, token counts, grouped by `conversation_id`), with `tool_calls` made by a response
and `tool_results` sent with the next one. The newer one keeps a content-addressed
message store: `threads` (a conversation), `turns` (a model call: the thread, its model
and tokens, its prompt `parent_message_hash` and its response `tip_message_hash`),
`messages` linked by `parent_hash` (a thread is the chain from its tip back to the root), and their ordered `parts` (text, reasoning,
tool_call, tool_result; long text may be kept as `fragments`). A database written by both
is read from both, and a response logged in both is taken from the newer tables once.

Identity: a response's id (older) or a message's hash (newer). The default location is
`$LLM_USER_PATH/logs.db`, else the user's configuration directory's `io.datasette.llm`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import apsw

from . import databases
from .core import (
    MAX_FIELD_BYTES, MAX_RECORD_BYTES, Conversation, Entry, Event, Malformed, TooDeep, count, json_value, session_id,
    timestamp, tool_call,
)

NAME = "llm"


class _Unread(Exception):
    """A row too large (databases.fields) or too deeply nested to read: what it belongs to is skipped."""

    def __init__(self, malformed: Malformed) -> None:
        super().__init__(malformed.reason)
        self.malformed = malformed


def default_path(home: Path) -> Path:
    if os.environ.get("LLM_USER_PATH"):
        return Path(os.environ["LLM_USER_PATH"]) / "logs.db"
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "io.datasette.llm" / "logs.db"
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "io.datasette.llm" / "logs.db"


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    return databases.follow([root / "logs.db" if root.is_dir() else root], cursor, _read)


def _read(path: Path, conn: apsw.Connection, state: dict[str, Any]) -> Iterator[Event]:
    present = databases.tables(conn)
    newer = {"threads", "turns", "messages", "parts"} <= present
    if "responses" in present:
        yield from _responses(path, conn, state, skip_turns=newer)
    if newer:
        yield from _threads(path, conn, state)


# --- the older schema: one row per response ------------------------------------------


def _responses(path: Path, conn: apsw.Connection, state: dict[str, Any], *, skip_turns: bool) -> Iterator[Event]:
    group = "coalesce(conversation_id, id)"
    names = {row["id"]: row["name"] for row in databases.rows(
        conn, f"SELECT {databases.fields(conn, 'conversations')} FROM conversations")} \
        if "conversations" in databases.tables(conn) else {}  # a name too large is left out: the title is not needed
    calls = "tool_calls" in databases.tables(conn)
    select = databases.fields(conn, "responses")
    for key in databases.changed(conn, "responses", group, state):
        conv = Conversation(session_id(NAME, key), NAME, {"tool": NAME, "original_id": key, "title": names.get(key)},
                            title=names.get(key))
        system = None
        where_turns = "AND id NOT IN (SELECT id FROM turns)" if skip_turns else ""
        for row in databases.rows(conn, f"SELECT {select} FROM responses WHERE {group} = ? {where_turns} "
                                        "ORDER BY rowid", (key,)):
            try:
                results, made = _tool_rows(path, conn, row, calls)
            except _Unread as exc:
                yield exc.malformed
                continue
            where, stamp, rid = (str(path), row['_row']), timestamp(row.get("datetime_utc")), row["id"]
            if row.get("system") and row["system"] != system:
                system = row["system"]
                yield Entry(conv, {"uid": f"{rid}-system", "role": "system", "content": system, "timestamp": stamp}, where)
            for result in results:
                yield Entry(conv, {"uid": f"{rid}-result-{result['id']}", "role": "tool",
                                   "content": result.get("output") or result.get("exception") or "",
                                   "tool_call_id": result.get("tool_call_id"), "tool_name": result.get("name"),
                                   "timestamp": stamp}, where)
            if row.get("prompt"):
                yield Entry(conv, {"uid": f"{rid}-prompt", "role": "user", "content": row["prompt"],
                                   "timestamp": stamp}, where)
            if row.get("response") or made:
                yield Entry(conv, {"uid": f"{rid}-response", "role": "assistant", "content": row.get("response") or None,
                                   "tool_calls": made or None, "reasoning": row.get("reasoning") or None,
                                   "timestamp": stamp}, where, _usage(row))


def _tool_rows(path: Path, conn: apsw.Connection, row: dict[str, Any], calls: bool) -> tuple[list, list]:
    """A response's tool results (sent with it) and the tool calls it made; _Unread when it
    or one of them is too large to read."""
    too_large = databases.oversize(path, "responses", row)
    if too_large is not None:
        raise _Unread(too_large)
    if not calls:
        return [], []
    found = {}
    for table in ("tool_results", "tool_calls"):
        select = databases.fields(conn, table)
        found[table] = list(databases.rows(
            conn, f"SELECT {select} FROM {table} WHERE response_id = ? ORDER BY id", (row["id"],)))
        for item in found[table]:
            too_large = databases.oversize(path, table, item, f"response {row['id']} skipped")
            if too_large is not None:
                raise _Unread(too_large)
    made = [tool_call(c.get("tool_call_id"), c.get("name"), c.get("arguments")) for c in found["tool_calls"]]
    return found["tool_results"], made


def _usage(row: dict[str, Any]) -> dict[str, Any] | None:
    model = row.get("resolved_model") or row.get("model")
    if not model:
        return None
    return {"model": str(model), "input_tokens": count(row.get("input_tokens")),
            "output_tokens": count(row.get("output_tokens"))}


# --- the newer schema: threads, turns and a content-addressed message chain -------------


def _threads(path: Path, conn: apsw.Connection, state: dict[str, Any]) -> Iterator[Event]:
    threads, turns_select = databases.fields(conn, "threads"), databases.fields(conn, "turns")
    for thread in databases.changed(conn, "turns", "thread_id", state):
        # A thread's or a turn's value too large to read (a name, options) is left out: its messages are read.
        info = next(databases.rows(conn, f"SELECT {threads} FROM threads WHERE id = ?", (thread,)), {})
        metadata = {"tool": NAME, "original_id": thread, "title": info.get("name"), "forked_from": info.get("forked_from")}
        conv = Conversation(session_id(NAME, thread), NAME, metadata, title=info.get("name"))
        # A turn's chain ends at its response (tip) and starts after its prompt (parent): the
        # usage and time of a model call belong to the response.
        turns = {t["tip_message_hash"]: t for t in databases.rows(
            conn, f"SELECT {turns_select} FROM turns WHERE thread_id IS ? ORDER BY rowid", (thread,))}
        stamp = timestamp(info.get("datetime_utc"))
        for message in _chain(conn, info.get("tip_message_hash") or next(reversed(turns), None)):
            turn = turns.get(message["hash"])
            if turn is not None:
                stamp = timestamp(turn.get("datetime_utc")) or stamp
            try:
                entries = list(_parts(path, conn, message, stamp))
            except _Unread as exc:
                yield exc.malformed
                continue
            for i, entry in enumerate(entries):
                last = turn is not None and i == len(entries) - 1
                yield Entry(conv, entry, (str(path), message['_row']), _usage(turn) if last else None)


def _chain(conn: apsw.Connection, tip: str | None) -> list[dict[str, Any]]:
    """The thread's messages, oldest first: from its tip back through each parent (a value
    too large to read, such as provider metadata, left out)."""
    chain, at, seen = [], tip, set()
    select = databases.fields(conn, "messages")
    while at and at not in seen:
        seen.add(at)
        message = next(databases.rows(conn, f"SELECT {select} FROM messages WHERE hash = ?", (at,)), None)
        if message is None:
            break
        chain.append(message)
        at = message.get("parent_hash")
    return chain[::-1]


def _parts(path: Path, conn: apsw.Connection, message: dict[str, Any], stamp: float | None) -> Iterator[dict[str, Any]]:
    role = message.get("role") if message.get("role") in ("system", "user", "assistant", "tool") else "user"
    text, reasoning, calls, size = [], [], [], 0
    select = databases.fields(conn, "parts")
    for part in databases.rows(conn, f"SELECT {select} FROM parts WHERE message_hash = ? ORDER BY position",
                               (message["hash"],)):
        too_large = databases.oversize(path, "parts", part, f"message {message['hash']} skipped")
        if too_large is not None:
            raise _Unread(too_large)
        try:
            payload = json_value(part.get("payload")) or {}
        except TooDeep as exc:
            raise _Unread(Malformed(str(path), part["_row"], f"parts row {part['_row']}: payload not read: {exc}; "
                                                             f"message {message['hash']} skipped")) from None
        body = part.get("text") if part.get("text") is not None else \
            _text_ref(path, conn, payload.get("text_ref"), part["_row"])
        size += len(body or "")
        if size > MAX_RECORD_BYTES:  # many parts, each within bounds, add up to more than a message holds
            raise _Unread(Malformed(str(path), part["_row"], f"message {message['hash']} is larger than "
                                                             f"{MAX_RECORD_BYTES:,} bytes: skipped"))
        kind = part.get("type")
        if kind == "text":
            text.append(body or "")
        elif kind == "reasoning":
            reasoning.append(body or "")
        elif kind == "tool_call":
            calls.append(tool_call(payload.get("tool_call_id"), part.get("tool_name") or payload.get("name"),
                                   payload.get("arguments")))
        elif kind == "tool_result":
            yield {"uid": f"{message['hash']}-{part['position']}", "role": "tool",
                   "content": str(payload.get("output") or payload.get("exception") or ""),
                   "tool_call_id": payload.get("tool_call_id"), "tool_name": part.get("tool_name"), "timestamp": stamp}
    if any(text) or calls or any(reasoning):
        yield {"uid": message["hash"], "role": role, "content": "".join(text) or None, "tool_calls": calls or None,
               "reasoning": "\n".join(r for r in reasoning if r) or None, "timestamp": stamp}


def _text_ref(path: Path, conn: apsw.Connection, ref: Any, row: int) -> str | None:
    """Text kept as a list of literals and fragment references, put back together; _Unread
    when a fragment, or the whole, is larger than the store takes."""
    if not isinstance(ref, list):
        return None
    pieces, size = [], 0
    select = databases.fields(conn, "fragments")
    for piece in ref:
        if isinstance(piece, dict) and "literal" in piece:
            text = str(piece["literal"])
        elif isinstance(piece, dict) and "fragment" in piece:
            found = next(databases.rows(conn, f"SELECT {select} FROM fragments WHERE id = ?", (piece["fragment"],)), {})
            too_large = databases.oversize(path, "fragments", found, "its message skipped") if found else None
            if too_large is not None:
                raise _Unread(too_large)
            text = found.get("content") or ""
        else:
            continue
        size += len(text)
        if size > MAX_FIELD_BYTES:
            raise _Unread(Malformed(str(path), row, f"parts row {row}: its text is larger than {MAX_FIELD_BYTES:,} "
                                                    "bytes: its message skipped"))
        pieces.append(text)
    return "".join(pieces)
