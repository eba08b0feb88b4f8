"""The OpenAI Agents SDK's `SQLiteSession` database, as it keeps it.

`agent_sessions` holds one row per session id and `agent_messages` one row per item
(`session_id`, `message_data`: the item as JSON in the Responses format, see
responses.py, `created_at`); a renamed table is found by its columns. The SDK keeps no file by default (its
sessions live in memory unless given a `db_path`), so PATH is required. An item keeps
its own id when it has one (`msg_...`, `fc_...`), else a fingerprint of its session,
position and content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import apsw

from . import databases, responses
from .core import Conversation, Entry, Event, session_id, timestamp, uid

NAME = "openai-agents"


def default_path(home: Path) -> None:
    return None  # no default: SQLiteSession keeps its items in memory unless given a file


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    return databases.follow([root], cursor, _read)


def _read(path: Path, conn: apsw.Connection, state: dict[str, Any]) -> Iterator[Event]:
    names: dict[str, str] = {}  # call id -> tool name, to name the outputs

    def convert(session: Any, position: int, item: Any, row: dict[str, Any]) -> Iterator[Event]:
        message = responses.message(item, names) if isinstance(item, dict) else None
        if message is None:
            return
        conv = Conversation(session_id(NAME, session), NAME, {"tool": NAME, "original_id": session})
        message["uid"] = uid(item.get("id"), conv.id, position, item)
        message["timestamp"] = timestamp(row.get("created_at"))
        yield Entry(conv, message, (str(path), row['_row']))

    yield from databases.json_items(path, conn, state, "agent_messages", "message_data", "SQLiteSession", convert)
