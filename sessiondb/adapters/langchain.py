"""LangChain's chat message history on a sessiondb session (docs/adapters/langchain.md).

A LangChain message becomes one sessiondb message a person and sessiondb's other readers
understand: human, ai, system and tool messages are the roles user, assistant, system and
tool; the text or the list of content blocks is the content; an AI message's tool calls
are stored in the chat-completions shape sessiondb keeps for every source, a tool
message's call id and tool name in their columns, and the message's own `id` is its uid,
so adding a message twice stores it once. What sessiondb has no column for (metadata,
usage, artifacts, invalid tool calls, a chunk's type...) rides in one extra content part
of type `langchain` that has no text, so search and the readable transcript never see
it, and the message reads back equal to what was added: a message added without an `id`
reads back without one (its uid, a fingerprint of it and of the message it follows, is
sessiondb's alone), as the SDK's own in-memory history gives it back.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
import re
from typing import Any, Callable, Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import (
    AIMessage, AIMessageChunk, BaseMessage, ChatMessage, ChatMessageChunk, FunctionMessage, FunctionMessageChunk,
    HumanMessage, HumanMessageChunk, SystemMessage, SystemMessageChunk, ToolMessage, ToolMessageChunk,
    message_to_dict,
)

from ..errors import InvalidInput, NotFound
from ..inputs import MAX_PAGE
from ..model import Message, MessageState
from ..store.aio import AsyncStore
from ..store.contract import Store
from .binding import BoundToStore, StoreBinding, user_scope, user_session_id

SOURCE = "langchain"
#: Session metadata: the id the history was given, when the session is a user's (named by a digest).
ORIGINAL_ID = "langchain_session_id"
#: The content part that keeps what sessiondb has no column for. It has no `text`, so it
#: is never searched nor shown as text.
EXTRAS = "langchain"
_CLASSES: dict[str, type[BaseMessage]] = {cls.model_fields["type"].default: cls for cls in (
    HumanMessage, AIMessage, SystemMessage, ChatMessage, FunctionMessage, ToolMessage, HumanMessageChunk,
    AIMessageChunk, SystemMessageChunk, ChatMessageChunk, FunctionMessageChunk, ToolMessageChunk)}
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_TYPES = {role: kind for kind, role in _ROLES.items()}
_OTHER_ROLES = {"HumanMessageChunk": "user", "AIMessageChunk": "assistant", "SystemMessageChunk": "system",
                "ToolMessageChunk": "tool", "FunctionMessageChunk": "tool", "function": "tool"}


def to_stored(message: BaseMessage, follows: str = "") -> dict[str, Any]:
    """The sessiondb message for a LangChain message; `from_stored` gives it back equal."""
    if not isinstance(message, BaseMessage):
        raise InvalidInput(f"a chat history stores LangChain messages, not {type(message).__name__}")
    record = message_to_dict(message)
    kind, data = record["type"], record["data"]
    role = _ROLES.get(kind) or _OTHER_ROLES.get(kind) or _chat_role(data)
    # A message without an id gets a uid of its own words and of the uid it follows, so the
    # same words said twice are two messages while a retry computes the same uid.
    uid = data.get("id") or _MINTED + hashlib.sha256(
        f"{follows}\x1f{json.dumps(record, sort_keys=True, default=repr)}".encode("utf-8", "surrogatepass")).hexdigest()[:40]
    row: dict[str, Any] = {"uid": uid, "role": role, "content": data.get("content")}
    if role == "assistant" and data.get("tool_calls"):
        row["tool_calls"] = [_stored_call(call) for call in data["tool_calls"]]
    if role == "tool":
        row["tool_call_id"] = data.get("tool_call_id")
        row["tool_name"] = data.get("name")
    # Whatever the columns and the class's defaults do not give back exactly is kept
    # beside them.
    shown, defaults = _fields_of(row), _defaults(type(message))
    extras = {key: value for key, value in data.items() if key not in ("type", "id")
              and (shown[key] if key in shown else defaults.get(key, _MISSING)) != value}
    if kind != _TYPES.get(role):
        extras["type"] = kind
    if extras or (isinstance(row["content"], list) and row["content"] and _holds_extras(row["content"])):
        text_only = isinstance(row["content"], str)
        blocks = ([{"type": "text", "text": row["content"]}] if row["content"] else []) if text_only else row["content"]
        row["content"] = [*blocks, {"type": EXTRAS, "text_content": text_only, "fields": extras}]
    return row


def from_stored(stored: Message) -> BaseMessage:
    """The LangChain message a stored sessiondb message holds."""
    fields = _fields_of({"uid": stored.uid, "role": stored.role, "content": stored.content,
                         "tool_calls": stored.tool_calls, "tool_call_id": stored.tool_call_id,
                         "tool_name": stored.tool_name})
    content, extras = stored.content, {}
    if isinstance(content, list) and content and _holds_extras(content):
        extras = dict(content[-1]["fields"])
        blocks = content[:-1]
        fields["content"] = (blocks[0]["text"] if blocks else "") if content[-1]["text_content"] else blocks
        fields.update(extras)
    kind = fields.pop("type", None) or _TYPES.get(stored.role, "human")
    cls = _CLASSES.get(kind)
    if cls is None:
        raise InvalidInput(f"message {stored.uid!r} is of an unknown LangChain type {kind!r}")
    known = cls.model_fields
    return cls(**{key: value for key, value in fields.items() if key in known or key in extras})


def _fields_of(row: dict[str, Any]) -> dict[str, Any]:
    """The LangChain fields a stored row gives by its columns alone."""
    fields: dict[str, Any] = {"id": None if _MINTED_UID.fullmatch(row["uid"]) else row["uid"], "content": row["content"] if row["content"] is not None else ""}
    if row["role"] == "assistant":
        fields["tool_calls"] = [_langchain_call(call) for call in row.get("tool_calls") or []]
    if row["role"] == "tool":
        fields["tool_call_id"] = row.get("tool_call_id") or ""  # a tool message stored without one elsewhere
        fields["name"] = row.get("tool_name")
    return fields


def _holds_extras(blocks: list[Any]) -> bool:
    """Whether the last of a content's blocks is the part of extras (a list content whose own
    last block looks like one gets the part too, so exactly one is taken off on reading)."""
    return isinstance(blocks[-1], dict) and blocks[-1].get("type") == EXTRAS


_MISSING = object()
#: The uids given to messages added without an id: read back without one.
_MINTED = "lc-"
_MINTED_UID = re.compile(r"lc-[0-9a-f]{40}")


@functools.cache
def _defaults(cls: type[BaseMessage]) -> dict[str, Any]:
    """The values a message class gives the fields it is not handed."""
    return {name: field.get_default(call_default_factory=True) for name, field in cls.model_fields.items()
            if not field.is_required()}


def _chat_role(data: dict[str, Any]) -> str:
    """A ChatMessage's role, when it is one sessiondb has; anything else speaks as the user."""
    role = data.get("role")
    return role if role in _TYPES else "user"


def _stored_call(call: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.dumps(call.get("args"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"tool call {call.get('name')!r} has arguments that are not JSON: {exc}") from None
    return {"id": call.get("id"), "type": "function", "function": {"name": call.get("name"), "arguments": arguments}}


def _langchain_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    try:
        args = json.loads(function.get("arguments") or "{}")
    except (TypeError, ValueError):
        args = function.get("arguments")
    return {"name": function.get("name"), "args": args, "id": call.get("id"), "type": "tool_call"}


def _unstored(messages: list[BaseMessage], _root: Any, tail: list[Message],
              history: Callable[[], list[Message]]) -> list[dict[str, Any]]:
    """The rows storing what of `messages` follows the conversation's end (`tail`, its newest
    live messages). A batch that starts with the whole live history (read back and handed
    over) skips it: the messages without ids among it have no id to be found by."""
    if len(tail) == MAX_PAGE < len(messages) + 1:  # the end, read as far as one read goes: the tip whole
        tip = tail[-1].session_id
        tail = [m for m in history() if m.session_id == tip and m.state == MessageState.ACTIVE.value]
    whole = len(tail) <= len(messages)
    done = len(tail) if whole and tail and [from_stored(m) for m in tail] == messages[:len(tail)] else 0
    rows, follows = [], tail[-1].uid if tail else ""
    for message in messages[done:]:
        rows.append(to_stored(message, follows))
        follows = rows[-1]["uid"]
    return rows


class SessiondbChatMessageHistory(BoundToStore, BaseChatMessageHistory):
    """The messages of one sessiondb session, as LangChain's chat history.

    Built from the session id plus either `store=` (an open Store or AsyncStore, left
    open) or where to open one (`location`, `home=`, `profile=`...), which the history
    owns: `close()` it, or use it as a context manager. The session is created, with
    source "langchain", by the first message added. With `user_id`, it is that person's:
    stamped with them and named by a digest of the user and the id (`store_session_id`),
    so another user's history of the same id never reads nor writes it.

    langchain-core has deprecated `BaseChatMessageHistory` since 1.6.4 (to be removed in
    2.0) in favour of LangGraph's short-term memory, a checkpointer on the graph
    (https://docs.langchain.com/oss/python/langchain/short-term-memory): for new code
    sessiondb's LangGraph saver, `sessiondb.adapters.langgraph.SessiondbSaver`, is the
    recommended path; this history stays for chains built on `RunnableWithMessageHistory`.
    """

    def __init__(self, session_id: str, location: str | os.PathLike[str] | None = None, *,
                 store: Store | AsyncStore | None = None, user_id: str | None = None, **open_options: Any) -> None:
        self.session_id = session_id
        self.user_id = user_scope(user_id)
        #: The session that keeps this history: `session_id` itself, or a user's, derived from both.
        self.store_session_id = session_id if self.user_id is None else user_session_id(
            SOURCE, self.user_id, session_id)
        self._stamp = {} if self.user_id is None else {"user_id": self.user_id, "metadata": {ORIGINAL_ID: session_id}}
        self._binding = StoreBinding(store, location, **open_options)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """The live conversation, across compactions (a compacted history reads its summary)."""
        try:
            live = self.store.transcript(self.store_session_id, tip=True)
        except NotFound:
            return []
        return [from_stored(m) for m in live]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Store the messages as one atomic batch; a message already stored (by id) is not stored
        again. One store call, which creates the session on the first and reads the
        conversation's end with its tip locked."""
        if messages:
            messages = list(messages)
            self.store.extend(self.store_session_id, functools.partial(_unstored, messages),
                              newest=min(len(messages) + 1, MAX_PAGE), create={"source": SOURCE, **self._stamp})

    def clear(self) -> None:
        """Rewind the conversation: its messages are kept, out of the history and of search,
        and `store.restore_rewound(store_session_id)` brings them back."""
        try:  # one store call: the rewind acts on the conversation's live tip, wherever it is now
            self.store.rewind(self.store_session_id, 0)
        except NotFound:
            return

    async def aget_messages(self) -> list[BaseMessage]:
        return await asyncio.to_thread(lambda: self.messages)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await asyncio.to_thread(self.add_messages, list(messages))

    async def aclear(self) -> None:
        await asyncio.to_thread(self.clear)
