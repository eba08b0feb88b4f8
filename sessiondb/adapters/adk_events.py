"""One Google ADK event as one sessiondb message, and back, losslessly.

The message is what a person reads and searches: the role (user, assistant, a function
call as the assistant's tool calls, a function response as a tool message, an event
without content as a system row), the text of the event's parts, and the model's
thoughts as reasoning. Its list content also carries the whole event as JSON in a part
of its own (`{"type": "adk_event", "event": {...}}`), which is what the event is read back
from, so every field the SDK has (and every field it gains later) survives. The uid is
the event's id: appending an event twice stores it once.

A message that no ADK event wrote (a compaction's summary, a line another writer
appended) is read back as an event made from its role and text.
"""

from __future__ import annotations

import json
from typing import Any

from google.adk.events.event import Event
from google.genai import types

from ..model import Message, Role

#: The content part that carries the event itself.
EVENT_PART = "adk_event"
#: The author of an event read from a message no ADK event wrote.
FOREIGN_AUTHOR = "sessiondb"


def message_of(event: Event) -> dict[str, Any]:
    """The sessiondb message that stores `event`."""
    record = event.model_dump(mode="json", exclude_none=True)  # as JSON would read it, half characters kept
    parts = list(event.content.parts or []) if event.content else []
    calls = [p.function_call for p in parts if p.function_call]
    responses = [p.function_response for p in parts if p.function_response]
    said = [p.text for p in parts if p.text and not p.thought]
    thoughts = [p.text for p in parts if p.text and p.thought]
    if responses:
        said += [json.dumps(r.response, ensure_ascii=False, sort_keys=True, default=str) for r in responses]
    content: list[dict[str, Any]] = [{"type": "text", "text": "\n".join(said)}] if said else []
    content.append({"type": EVENT_PART, "event": record})
    message: dict[str, Any] = {
        "uid": event.id,
        "role": _role_of(event, bool(responses)),
        "content": content,
        "timestamp": event.timestamp,
    }
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function",
             "function": {"name": c.name or "tool", "arguments": json.dumps(c.args or {}, ensure_ascii=False,
                                                                            sort_keys=True, default=str)}}
            for c in calls
        ]
    if len(responses) == 1:  # one response names its call; several stay in the event
        message["tool_call_id"] = responses[0].id
        message["tool_name"] = responses[0].name
    if thoughts:
        message["reasoning"] = "\n".join(thoughts)
    return message


def _role_of(event: Event, answers_a_call: bool) -> str:
    if answers_a_call:
        return Role.TOOL.value
    if event.content is None or not event.content.parts:
        return Role.SYSTEM.value  # state changes, transfers, control events: nothing said
    return Role.USER.value if event.author == "user" else Role.ASSISTANT.value


def event_of(message: Message) -> Event:
    """The event `message` stores, or an event made from a message no ADK event wrote."""
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, dict) and part.get("type") == EVENT_PART:
                return Event.model_validate(part["event"])
    user = message.role == Role.USER.value
    return Event(
        id=message.uid,
        invocation_id="",
        author="user" if user else FOREIGN_AUTHOR,
        content=types.Content(role="user" if user else "model", parts=[types.Part(text=message.text)]),
        timestamp=message.timestamp,
    )
