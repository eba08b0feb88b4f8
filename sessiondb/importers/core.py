"""What every importer produces and shares: the events of a history, identity, the report.

An importer reads another tool's history and yields events, in order: a `Conversation`
(one source session, before its messages), `Entry` (one message, with its usage when the
source has it), `Totals` (a source's running usage counters), `Malformed` (something that
could not be read, with its file and line) and `Mark` (how far a file or database has
been read, applied to the cursor only once everything before it is stored). The writer
(writer.py) turns them into calls on the public Store contract.

Identity comes from the source: a message keeps the uuid or id its tool gave it, or gets
a fingerprint of its session, position, role and content, so importing the same history
twice stores nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Union

from ..model import MessageLimits

#: A session id is built from the source's own id when that is short and plain;
#: anything else is replaced by a fingerprint, so an id never carries odd characters.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
#: How deeply a record read from a source may nest (objects in arrays in objects...): a
#: deeper one is refused where it is decoded (`loads`), so nothing downstream (conversion,
#: fingerprint, the store's JSON) recurses without bound.
MAX_DEPTH = 100
#: The most one column of a source's row may hold: the store's default bound on a message's content.
#: A row holding more is named and skipped without being read (databases.py).
MAX_FIELD_BYTES = MessageLimits().max_content_bytes
#: The most one record holding a whole message as JSON may hold (a line of a history file,
#: an item's row): it carries the message escaped, sometimes twice (Claude Code repeats a
#: tool's output), so four fields' worth. A longer one is named and skipped without being
#: held in memory (files.py, databases.py).
MAX_RECORD_BYTES = 4 * MAX_FIELD_BYTES


@dataclass
class Conversation:
    """One session of the source. `id` is the sessiondb session id it is stored under."""

    id: str
    source: str
    metadata: dict[str, Any]
    title: str | None = None
    model: str | None = None
    parent_id: str | None = None  # the sessiondb id of the session this one was started from
    parent_relation: str | None = None
    #: When the source says the session began; else the session starts at its first message's time.
    started_at: float | None = None


@dataclass
class Entry:
    """One message for `conversation`, in Store.append's input shape; `where` is its origin
    (file, line or rowid), to report it if the store refuses it."""

    conversation: Conversation
    message: dict[str, Any]
    where: tuple[str, int | None]
    usage: dict[str, Any] | None = None  # record_usage's arguments, recorded only if the message is new


@dataclass
class Totals:
    """A source's running usage counter for one session: only its growth since the last
    import is recorded (under the usage's model). `counter` names the counter, when the
    source keeps several (one per model)."""

    conversation: Conversation
    usage: dict[str, Any]
    counter: str = "session"
    where: tuple[str, int | None] | None = None  # its file and line or rowid, to report it if the store refuses it


@dataclass
class Malformed:
    """Something skipped because it could not be read: a line, a row, a message."""

    file: str
    line: int | None
    reason: str


@dataclass
class Mark:
    """Everything before this event is read; `apply` moves the cursor past it."""

    apply: Callable[[], None]


Event = Union[Conversation, Entry, Totals, Malformed, Mark]


@dataclass
class ImportReport:
    """What an import did: sessions and messages written, skipped and unreadable."""

    source: str
    path: str
    sessions: int = 0  # source sessions seen
    sessions_created: int = 0
    messages: int = 0  # messages newly stored
    skipped: int = 0  # messages already stored (same identity)
    conflicts: int = 0  # stored messages whose source changed since: kept as stored
    usage_calls: int = 0  # usage rows recorded
    malformed: list[dict[str, Any]] = field(default_factory=list)  # {"file", "line", "reason"}
    seen: set[str] = field(default_factory=set, repr=False)  # the session ids behind `sessions`
    #: For progress: the files read so far of `files`, how many the source has when that is
    #: known before reading (a tool that keeps one file per session); not part of the report.
    files_read: int = field(default=0, repr=False)
    files: int | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if k not in ("seen", "files_read", "files")}

    def saw(self, session_id: str) -> None:
        self.seen.add(session_id)
        self.sessions = len(self.seen)

    def add(self, other: "ImportReport") -> None:
        """Fold a later pass (of --watch) into this report: a session seen by many passes counts once."""
        for name in ("sessions_created", "messages", "skipped", "conflicts", "usage_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for session_id in other.seen:
            self.saw(session_id)
        self.malformed.extend(other.malformed)


def fingerprint(*parts: Any) -> str:
    """A stable digest of the parts (JSON of them), for identities the source does not give."""
    data = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def session_id(source: str, original: Any) -> str:
    """The sessiondb id of a source session: `<source>-<its id>`, or a fingerprint of it."""
    text = str(original)
    return f"{source}-{text}" if _PLAIN_ID.fullmatch(text) else f"{source}-{fingerprint(source, text)}"


def uid(original: Any, *context: Any) -> str:
    """A message uid from the source's own id, or a fingerprint of it when it is not plain."""
    text = "" if original is None else str(original)
    return text if text and _PLAIN_ID.fullmatch(text) else fingerprint(text, *context)


def timestamp(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string (UTC when it has no offset) or a number."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) / 1000 if value > 1e11 else float(value)  # milliseconds, as some tools write
    if isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)  # the tools log UTC
        return moment.timestamp()
    return None


class TooDeep(ValueError):
    """A JSON value nested deeper than MAX_DEPTH."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than {MAX_DEPTH} levels")


def loads(text: str | bytes) -> Any:
    """json.loads of source data, refusing (TooDeep) a value nested deeper than MAX_DEPTH:
    json.loads itself recurses, and so would everything that walks its value."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    todo = [(value, 1)] if isinstance(value, (dict, list)) else []
    while todo:  # iteratively, so the check cannot overflow the stack it protects
        item, depth = todo.pop()
        children = item.values() if isinstance(item, dict) else item
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_DEPTH:
                    raise TooDeep()
                todo.append((child, depth + 1))
    return value


def json_value(text: Any) -> Any:
    """A JSON column's value, or None when it is empty or not JSON; TooDeep when it nests
    deeper than MAX_DEPTH (the reader names and skips its row)."""
    if not isinstance(text, (str, bytes)) or not text:
        return None
    try:
        return loads(text)
    except TooDeep:
        raise
    except ValueError:
        return None


def text_of(content: Any) -> str:
    """Readable text of a content value: a string, or the text of a list of blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        pieces = []
        for block in content:
            if isinstance(block, str):
                pieces.append(block)
            elif isinstance(block, dict):
                value = block.get("text")
                if isinstance(value, str):
                    pieces.append(value)
                elif block.get("type") in ("image", "input_image", "image_url"):
                    pieces.append("[image]")
        return "\n".join(p for p in pieces if p)
    return str(content)


def count(value: Any) -> int:
    """A token count as the source wrote it, or 0 when it is missing or not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def cost(value: Any) -> float:
    """A cost as the source wrote it (the store refuses one that is not finite or negative),
    or 0 when it is missing or not a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def label(value: Any) -> str | None:
    """A short label (a stop reason, a kind) as the store takes it, or None."""
    return value[:200] if isinstance(value, str) and value else None


def tool_call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """One tool call in the shape sessiondb stores (the chat-completions shape)."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    return {"id": None if call_id is None else str(call_id), "type": "function",
            "function": {"name": str(name or "tool"), "arguments": arguments}}
