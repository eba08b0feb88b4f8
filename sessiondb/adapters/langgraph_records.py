"""How a LangGraph thread is kept in a sessiondb session: its records, their uids and forms.

A checkpoint and each pending write are one message of the thread's session, role
`tool`, tool name `langgraph`, display kind `langgraph.checkpoint` or `langgraph.write`.
Their content is a single part with no `text`: never searched, never shown as text, and
never counted as user activity. Its uid comes from what identifies it in LangGraph, so
storing it again stores nothing: (checkpoint_ns, checkpoint_id) for a checkpoint,
(checkpoint_ns, checkpoint_id, task_id, idx) for a write (an error or an interrupt, which
a task may write again with another value, adds a digest of that value; the newest wins).

Values are kept exactly as the saver's serializer typed them (its type name and its
bytes, base64 in the JSON). A checkpoint stores inline only the channels that changed
(`new_versions`) or that its parent does not hold at the same version; for the others it
keeps a reference to the record that holds the value (that record's uid and message id),
so a channel written once is stored once however many checkpoints follow.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Mapping

from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import InvalidInput
from ..inputs import check_session_id
from ..model import Message

SOURCE = "langgraph"
TOOL = "langgraph"
CHECKPOINT = "langgraph.checkpoint"
WRITE = "langgraph.write"
ARCHIVED = "langgraph.archived"  # the marker a prune leaves: what it archived (never read back)


def session_id_of(thread_id: Any) -> str:
    """The session a thread is kept in: `langgraph:<thread id>`, or a digest of a thread id
    that cannot name a session (too long, a path separator...)."""
    plain = f"{SOURCE}:{thread_id}"
    try:
        return check_session_id(plain)
    except InvalidInput:
        return f"{SOURCE}#{_digest(str(thread_id))}"


def checkpoint_uid(ns: str, checkpoint_id: str) -> str:
    return f"lg-checkpoint:{_digest(ns, checkpoint_id)}"


def write_uid(ns: str, checkpoint_id: str, task_id: str, idx: int, value: tuple[str, str]) -> str:
    # A regular write is written once per (task, idx); a special one (negative idx) may be
    # written again with another value by the task's next attempt, which is kept beside it.
    extra = value if idx < 0 else ()
    return f"lg-write:{_digest(ns, checkpoint_id, task_id, str(idx), *extra)}"


def again(record: Mapping[str, Any]) -> dict[str, Any]:
    """A write record stored a second time, after its checkpoint's record (Arrivals): the
    same record under a uid of its own, so storing it again stores nothing twice either."""
    return {**record, "uid": f"{record['uid']}:again"}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:40]


def dump(serde: SerializerProtocol, value: Any) -> list[str]:
    """A value as the serializer types it, JSON-safe: [type name, base64 of its bytes]."""
    kind, data = serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode("ascii")]


def load(serde: SerializerProtocol, typed: list[str]) -> Any:
    return serde.loads_typed((typed[0], base64.b64decode(typed[1])))


def record_message(uid: str, kind: str, part: Mapping[str, Any]) -> dict[str, Any]:
    return {"uid": uid, "role": "tool", "tool_name": TOOL, "display_kind": kind,
            "content": [{**part, "type": kind}]}


def part_of(message: Message) -> dict[str, Any] | None:
    """The record a message of a thread's session holds, or None for any other message."""
    if message.tool_name != TOOL or message.display_kind not in (CHECKPOINT, WRITE):
        return None
    content = message.content
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    return content[0]


@dataclass(frozen=True)
class Stored:
    """A checkpoint record as found in the session: its message's uid and id, and its part."""

    uid: str
    message_id: int
    part: dict[str, Any]

    def reference(self, versions: Mapping[str, Any], channel: str, version: Any) -> list[Any] | None:
        """Where this checkpoint's value of `channel` at `version` is stored: [uid, message id].

        `versions` are this checkpoint's channel versions. None when it holds no value for
        the channel at that version (a child then stores the value itself)."""
        if versions.get(channel, _ABSENT) != version:
            return None
        if channel in self.part["blobs"]:
            return [self.uid, self.message_id]
        return self.part["refs"].get(channel)


_ABSENT = object()


class Arrivals:
    """Where a saver's checkpoint records landed, and the writes that landed before theirs.

    LangGraph stores a step's checkpoint and its tasks' writes at once, from a pool of
    threads or tasks, so a write may be appended before the record of its checkpoint, and
    even before its parent's: a read looks for a checkpoint's writes after the checkpoint
    before it, and would miss it (a delta channel rebuilt from its writes would lose one).
    Of a checkpoint's put and a put_writes, the one that finishes second finds here that
    writes landed before the record and has them stored again, after it. Writes to a
    checkpoint this saver did not put (one read from the store) are after its record
    already; their entries are forgotten after `KEEP` others."""

    KEEP = 1024  # more than the steps a process has in flight at once

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: OrderedDict[tuple[str, ...], int] = OrderedDict()  # checkpoint -> its message id
        self._writes: OrderedDict[tuple[str, ...], list[tuple[int, dict[str, Any]]]] = OrderedDict()

    def checkpoint(self, key: tuple[str, ...], message_id: int) -> list[dict[str, Any]]:
        """The checkpoint's record landed at `message_id`: its writes that landed before it."""
        with self._lock:
            _keep(self._records, key, message_id, self.KEEP)
            early = self._writes.pop(key, [])
        return [record for at, record in early if at < message_id]

    def writes(self, key: tuple[str, ...], landed: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Writes landed (message id, record): those before their checkpoint's record."""
        with self._lock:
            at = self._records.get(key)
            if at is None:
                _keep(self._writes, key, [*self._writes.get(key, ()), *landed], self.KEEP)
                return []
        return [record for row_id, record in landed if row_id < at]


def _keep(entries: OrderedDict, key: Any, value: Any, most: int) -> None:
    entries[key] = value
    entries.move_to_end(key)
    while len(entries) > most:
        entries.popitem(last=False)
