"""LangChain's `SQLChatMessageHistory` table, as it keeps it: `message_store`.

One row per message (`id`, `session_id`, `message`: the message as `message_to_dict`
writes it, `{"type": "human" | "ai" | "system" | "tool" | ..., "data": {...}}`). An AI
message's `tool_calls` pair with tool messages by `tool_call_id`; its `usage_metadata`
and `response_metadata` give tokens and model. A renamed table (`table_name=`) is
found by its columns. There is no default file (the application chooses its connection
string), so PATH is required.
A message keeps its `id` when it has one, else a fingerprint of its session, position
and content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import apsw

from . import databases
from .core import Conversation, Entry, Event, Malformed, count, session_id, text_of, tool_call, uid

NAME = "langchain"
ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "tool",
         "AIMessageChunk": "assistant", "HumanMessageChunk": "user"}


def default_path(home: Path) -> None:
    return None  # no default: the application names its database


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    return databases.follow([root], cursor, _read)


def _read(path: Path, conn: apsw.Connection, state: dict[str, Any]) -> Iterator[Event]:
    def convert(session: Any, position: int, item: Any, row: dict[str, Any]) -> Iterator[Event]:
        data = item.get("data") if isinstance(item, dict) else None
        role = ROLES.get(str(item.get("type"))) if isinstance(item, dict) else None
        if role is None and isinstance(data, dict) and item.get("type") == "chat":
            role = data.get("role") if data.get("role") in ("system", "user", "assistant", "tool") else "user"
        if role is None or not isinstance(data, dict):
            yield Malformed(str(path), row["_row"], f"row {row['_row']}: not a LangChain message")
            return
        conv = Conversation(session_id(NAME, session), NAME, {"tool": NAME, "original_id": session})
        yield Entry(conv, _message(conv, position, item, data, role), (str(path), row['_row']), _usage(data))

    yield from databases.json_items(path, conn, state, "message_store", "message", "SQLChatMessageHistory", convert)


def _message(conv: Conversation, position: int, item: dict[str, Any], data: dict[str, Any], role: str) -> dict[str, Any]:
    calls = [tool_call(c.get("id"), c.get("name"), c.get("args")) for c in data.get("tool_calls") or []
             if isinstance(c, dict)]
    if not calls:  # a provider's raw calls, as older messages carry them
        raw = (data.get("additional_kwargs") or {}).get("tool_calls") or []
        calls = [tool_call(c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments"))
                 for c in raw if isinstance(c, dict)]
    return {"uid": uid(data.get("id"), conv.id, position, item), "role": role, "content": text_of(data.get("content")),
            "tool_calls": calls or None, "tool_call_id": data.get("tool_call_id") if role == "tool" else None,
            "tool_name": data.get("name") if role == "tool" else None}


def _usage(data: dict[str, Any]) -> dict[str, Any] | None:
    usage, meta = data.get("usage_metadata"), data.get("response_metadata") or {}
    model = meta.get("model_name") or meta.get("model")
    if not isinstance(usage, dict) or not model:
        return None
    details_in, details_out = usage.get("input_token_details") or {}, usage.get("output_token_details") or {}
    cached = count(details_in.get("cache_read"))
    return {"model": str(model), "input_tokens": max(0, count(usage.get("input_tokens")) - cached),
            "output_tokens": count(usage.get("output_tokens")), "cache_read_tokens": cached,
            "cache_write_tokens": count(details_in.get("cache_creation")),
            "reasoning_tokens": count(details_out.get("reasoning"))}
