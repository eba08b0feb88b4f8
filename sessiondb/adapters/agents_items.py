"""The OpenAI Agents SDK's session items as sessiondb messages: readable, searchable, lossless.

Each item is one message. Its role and text are what sessiondb shows and searches (the
Responses reading that importers/responses.py gives: user, assistant and system
messages, tool calls as an assistant's `tool_calls`, their outputs as tool messages,
reasoning summaries as `reasoning`); the item itself rides in the content as a part
`{"type": "openai_agents_item", "json": <the item exactly as json.dumps wrote it>}`, so
that reading it back returns the item byte for byte, key order included. An item sessiondb
has no reading of (a compaction item, an MCP listing...) is an assistant message without
text. A message written by someone else (the HTTP API, the CLI) has no such part and is
read as the plain item of its role and text.

Uids (the store's idempotency key, docs/adapters/openai-agents.md):
- an item with its own identity, `id` (not the SDK's placeholder) or else `call_id`, is
  `oa-<type>-<that id>-` and a fingerprint of the item, wherever and whenever it is added:
  the session protocol does not promise unique ids (the SDK's own fake model gives every
  message the id "1"), so an id repeated on a different item names a distinct item, while
  the same item added again is the same uid;
- any other item is `oa-` and a fingerprint of the item with the uid of the item it
  follows where it lands (the one before it in its batch, or the newest stored message),
  so the same words said in two turns are two messages, and a retry that lands where the
  first attempt did computes the same uid.
Both take the session's epoch (bumped by pop_item and clear_session) so an item added
again after it was undone is stored again instead of matching its undone row.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from ..errors import InvalidInput
from ..importers import responses
from ..model import MAX_UID_LENGTH, Message, Role, content_text, dump_json

#: The type of the content part that keeps the item as it was added.
ITEM_PART = "openai_agents_item"
#: The id the SDK puts on items whose model gave none: not an identity.
_PLACEHOLDER_IDS = frozenset({"__fake_id__"})


def normalise(item: Any, where: str) -> tuple[dict[str, Any], str]:
    """The item as JSON will give it back, and its JSON text; InvalidInput for what is not an item."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{where}: a session item is a dict, not {type(item).__name__}")
    try:
        text = json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: the item is not JSON-serialisable: {exc}") from None
    return json.loads(text), text


def own_identity(item: Mapping[str, Any]) -> str | None:
    """The id the item carries itself: `id`, else `call_id` (calls and their outputs)."""
    for key in ("id", "call_id"):
        value = item.get(key)
        if isinstance(value, str) and value and value not in _PLACEHOLDER_IDS:
            return value
    return None


def item_uid(item: Mapping[str, Any], follows: str, epoch: int) -> str:
    """The uid of `item` landing after the stored message whose uid is `follows` ('' first)."""
    suffix = f"~{epoch}" if epoch else ""
    identity = own_identity(item)
    if identity is not None:
        uid = f"oa-{item.get('type') or 'message'}-{identity}-{_digest(dump_json(item, 'item'))[:16]}{suffix}"
        if len(uid) <= MAX_UID_LENGTH and "\x00" not in uid:
            return uid
        return "oa-" + _digest("identity", uid)
    return "oa-" + _digest(dump_json(item, "item"), follows, str(epoch))


def to_message(item: dict[str, Any], text: str, uid: str, names: dict[str, str]) -> dict[str, Any]:
    """The message that stores `item` (its JSON `text`) under `uid`; `names` maps call ids to
    tool names, to name the outputs of calls seen before."""
    message = responses.message(item, names) or {"role": Role.ASSISTANT.value, "content": None}
    readable = message.get("content")
    message["content"] = ([{"type": "text", "text": readable}] if readable else []) + [
        {"type": ITEM_PART, "json": text}]
    message["uid"] = uid
    return message


def from_message(message: Message) -> dict[str, Any]:
    """The item a stored message holds: the one added, or the plain item of its role and text."""
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, Mapping) and part.get("type") == ITEM_PART and isinstance(part.get("json"), str):
                return json.loads(part["json"])
    text = content_text(message.content)
    if message.role == Role.TOOL.value and message.tool_call_id:
        return {"type": "function_call_output", "call_id": message.tool_call_id, "output": text}
    role = Role.USER.value if message.role == Role.TOOL.value else message.role
    return {"role": role, "content": text}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:40]
