"""The data model: plain dataclasses and enums, and the validation of caller input.

Nothing here does I/O. Input validation lives here so that every backend refuses the same
bad input with the same message, before anything is written.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Mapping

from .errors import InvalidInput

MAX_TITLE_LENGTH = 100
MAX_UID_LENGTH = 200
MAX_NAME_LENGTH = 200  # source, model, tool names and other short labels
MAX_SESSION_ID_LENGTH = 200
#: The latest time stored: the end of year 9999, the last a date can be shown for.
MAX_TIMESTAMP = 253402300799.0
#: The largest token count (or other counter) stored: far beyond any real use, well
#: inside SQLite's 64-bit integers even when a session's usage is summed.
MAX_COUNT = 10**15


@dataclass(frozen=True)
class MessageLimits:
    """How large one message may be, for append and import alike (InvalidInput past them).

    `max_content_bytes` bounds the content's UTF-8 (the text, or the parts as JSON);
    `max_parts` the number of parts in a list content. `open_store(limits=...)` sets them.
    """

    max_content_bytes: int = 16 * 1024 * 1024
    max_parts: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_content_bytes", "max_parts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(f"MessageLimits.{name} must be a positive integer, not {value!r}")


class Role(str, Enum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class MessageState(str, Enum):
    ACTIVE = "active"
    COMPACTED = "compacted"  # archived by a compaction: kept, searchable, not in the live view
    REWOUND = "rewound"  # undone by a rewind: kept, never searchable


#: Roles whose messages count as user activity (they move `last_activity_at`).
ACTIVITY_ROLES = frozenset({Role.USER.value, Role.ASSISTANT.value})
#: A display kind for notifications injected as synthetic user turns; not activity.
INTERNAL_NOTIFICATION = "internal_notification"


@dataclass(frozen=True)
class Message:
    """One stored message. `id` is the global order; `uid` is its identity in the session."""

    id: int
    session_id: str
    uid: str
    seq: int
    role: str
    content: str | list[Any] | None
    tool_calls: list[Any] | None = None
    tool_call_id: str | None = None
    tool_name: str | None = None
    reasoning: str | None = None
    finish_reason: str | None = None
    token_count: int | None = None
    timestamp: float = 0.0
    display_kind: str | None = None
    state: str = MessageState.ACTIVE.value

    @property
    def text(self) -> str:
        """The message's readable text: the content, or its text parts joined."""
        return content_text(self.content)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Session:
    id: str
    source: str
    profile: str | None
    session_key: str | None
    user_id: str | None
    chat_id: str | None
    chat_type: str | None
    thread_id: str | None
    title: str | None
    model: str | None
    parent_session_id: str | None
    started_at: float
    ended_at: float | None
    end_reason: str | None
    last_activity_at: float | None
    message_count: int
    tool_call_count: int
    pinned: bool
    archived: bool
    hidden: bool
    metadata: dict[str, Any] = field(default_factory=dict)
    #: How this session continues its parent: 'compression' (a rotation; followed by
    #: tip() and late writes), 'branch', or a caller's label ('reset', 'delegation'...).
    parent_relation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Turn:
    """One turn of a session: a user message and the agent's work until it stopped (S-50).

    `outcome` and `reason` are None while the turn runs; `reason` is a name from the
    guidance table (sessiondb.guidance.explain_turn gives its sentence).
    """

    id: str
    session_id: str
    user_uid: str | None  # the uid of the user message that started it
    cwd: str | None  # the working directory its file tools resolve relative paths against
    started_at: float
    ended_at: float | None = None
    outcome: str | None = None  # completed, interrupted or failed
    reason: str | None = None
    detail: str | None = None  # an error's text, for a failed turn
    #: the failed file edits that still stood when the turn ended (S-52), each a dict of
    #: path, error, mtime_ns and size (the file's state when the edit failed)
    receipts: list[dict[str, Any]] = field(default_factory=list)
    continued_by: str | None = None  # the turn that took its waiting correction (S-51)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class UsageRow:
    model: str
    provider: str
    task: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    reasoning_tokens: int
    cost_usd: float
    calls: int


@dataclass(frozen=True)
class Usage:
    """A session's accumulated usage: totals plus one row per (model, provider, task)."""

    session_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    rows: tuple[UsageRow, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The relation of a session rotated out of its parent by a compaction.
COMPRESSION = "compression"
#: The relation of a session started from another's messages by `branch`.
BRANCH = "branch"


@dataclass(frozen=True)
class Lease:
    """A compaction lease on one session: only its holder may commit a compaction.

    `token` is a fencing token (larger for every lease the store hands out); `watermark`
    is the highest message id the session held when the lease was taken, read in the
    database: the compaction covers the session's active messages up to it. The holder
    fields say who took it (`holder` is the caller's label) and let another process tell
    whether that holder is provably dead.
    """

    session_id: str
    token: int
    watermark: int
    holder: str | None
    pid: int
    host: str
    acquired_at: float
    expires_at: float
    ttl: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MaintenanceReport:
    """What optimize, vacuum or prune did (or, in a dry run, would do)."""

    action: str
    dry_run: bool
    bytes_before: int  # the store's size on disk, sidecars included
    bytes_after: int
    sessions: list[str] = field(default_factory=list)  # what prune removed (or would)
    warnings: list[str] = field(default_factory=list)


@dataclass
class SpoolReport:
    """What a spool replay did: files replayed, and files kept with the error that kept them."""

    replayed: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class Page:
    """One page of a listing; pass `cursor` back to get the next one (None at the end)."""

    items: list[Any]
    cursor: str | None


@dataclass(frozen=True)
class SearchHit:
    """One message found by a search.

    `snippet` is the matching text around the hit, each match wrapped in `<mark>` and
    `</mark>` (the text itself is not escaped). `score` is the bm25 relevance, higher is
    better (0.0 for hits found by a plain substring scan, which come newest first).
    `state` is 'active' or 'compacted' (archived by a compaction); rewound messages are
    never found.
    """

    session_id: str
    message_id: int
    uid: str
    role: str
    timestamp: float
    snippet: str
    score: float
    state: str
    session_title: str | None
    session_source: str

    @property
    def compacted(self) -> bool:
        return self.state == MessageState.COMPACTED.value

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "compacted": self.compacted}


@dataclass(frozen=True)
class StoreStats:
    """How much a store holds: sessions, messages by state, and its size on disk."""

    location: str
    sessions: int
    pinned: int
    archived: int
    hidden: int
    messages: int  # active
    compacted_messages: int
    rewound_messages: int
    usage_calls: int
    cost_usd: float
    size_bytes: int  # the database file's pages in use plus its WAL
    wal_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VerifyReport:
    """What Store.verify() found: every broken invariant in words, and how much was checked.

    `notes` say what could not be checked and why (a stale search index, say); they are
    not problems. `checked` counts what was looked at, by kind (sessions, messages...).
    """

    problems: list[str] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, **asdict(self)}


@dataclass
class ImportReport:
    """What an import did (or, for a dry run, would do): counts per kind of record."""

    sessions_created: int = 0
    sessions_merged: int = 0  # already stored: only what was missing was added
    messages_imported: int = 0
    messages_skipped: int = 0  # already stored (same uid)
    usage_rows_imported: int = 0
    usage_rows_skipped: int = 0
    turns_imported: int = 0
    turns_skipped: int = 0  # already stored (same turn id)
    #: Sessions whose parent is in neither the store nor the import (parent link cleared).
    detached: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ImportOutcome:
    """What importing one session did (see ImportReport for a whole import)."""

    created: bool
    messages_imported: int
    messages_skipped: int
    usage_imported: int
    usage_skipped: int
    detached_from: str | None  # the parent that was not there, when the link was cleared
    turns_imported: int = 0
    turns_skipped: int = 0


# --- text and JSON -------------------------------------------------------------------


def content_text(content: str | list[Any] | None) -> str:
    """The readable text of a content: itself, or its text parts joined by newlines.
    One pass over the parts: this is also the text a parts message is searched by."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def dump_json(value: Any, what: str) -> str:
    """Canonical JSON (sorted keys, no NaN): equal values always give equal strings."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} is not JSON-serialisable: {exc}") from None


def new_uid() -> str:
    return uuid.uuid4().hex


def new_session_id(now: float) -> str:
    """A readable, time-sortable id: `20261129_101500_3f9a1c2b`."""
    return f"{datetime.fromtimestamp(now).strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:8]}"


# --- validation of caller input ------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def clean_title(title: str | None) -> str | None:
    """Sanitise a title: control and bidi characters removed, whitespace collapsed.

    An empty result means "no title". Over-long titles are refused, not truncated, so two
    long titles never collide silently.
    """
    if title is None:
        return None
    if not isinstance(title, str):
        raise InvalidInput(f"title must be text, not {type(title).__name__}")
    check_unicode(title, "title")
    cleaned = " ".join(_CONTROL.sub(" ", title).split())
    if len(cleaned) > MAX_TITLE_LENGTH:
        raise InvalidInput(f"title is {len(cleaned)} characters; the limit is {MAX_TITLE_LENGTH}")
    return cleaned or None


def check_unicode(value: str, what: str) -> str:
    """Refuse text SQLite cannot store: an unpaired surrogate (from a JSON "\\ud800" escape
    or a surrogate-escaped file name) has no UTF-8 form."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode text: it holds an unpaired surrogate at "
                           f"character {exc.start}") from None
    return value


def check_label(value: Any, what: str, *, required: bool = False) -> str | None:
    """A short free-text label (source, model, chat id...): text, bounded, no NUL."""
    if value is None:
        if required:
            raise InvalidInput(f"{what} is required")
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}")
    check_unicode(value, what)
    if required and not value.strip():
        raise InvalidInput(f"{what} must not be empty")
    if len(value) > MAX_NAME_LENGTH or "\x00" in value:
        raise InvalidInput(f"{what} must be at most {MAX_NAME_LENGTH} characters without NUL")
    return value


_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f/\\\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def check_session_id(value: Any, what: str = "session_id") -> str:
    """A new session's id: 1-200 characters, not blank, no surrounding whitespace, no
    control or bidi characters and no path separators (ids name files and appear in
    terminals, URLs and download names)."""
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text, not {type(value).__name__}")
    check_unicode(value, what)
    bad = _ID_FORBIDDEN.search(value)
    if (not value.strip() or value != value.strip() or len(value) > MAX_SESSION_ID_LENGTH or bad
            or value in (".", "..")):
        raise InvalidInput(
            f"{what} {value!r} is not a valid session id: use 1-{MAX_SESSION_ID_LENGTH} characters, not blank, "
            "without surrounding spaces, control characters or '/' and '\\'")
    return value


def check_timestamp(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidInput(f"{what} must be timezone-aware (or seconds since the epoch)")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInput(f"{what} must be seconds since the epoch or an aware datetime")
    return float(value)


def check_stored_time(value: Any, what: str) -> float | None:
    """A time to store: as check_timestamp, and between 1970 and the end of year 9999,
    so that every stored time can be shown as a date."""
    seconds = check_timestamp(value, what)
    if seconds is not None and not 0 <= seconds <= MAX_TIMESTAMP:
        raise InvalidInput(f"{what} must be a time between 1970 and the year 9999 "
                           f"(0 to {MAX_TIMESTAMP:.0f} seconds since the epoch), not {seconds!r}")
    return seconds


def check_count(value: Any, what: str) -> int:
    """A counter to store (a message's or a usage row's tokens): a non-negative integer up to MAX_COUNT."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise InvalidInput(f"{what} must be an integer from 0 to {MAX_COUNT:,}, not {value!r}")
    return value


def check_metadata(metadata: Any) -> str:
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"metadata must be a mapping, not {type(metadata).__name__}")
    return dump_json(dict(metadata), "metadata")


@dataclass(frozen=True)
class NewMessage:
    """A validated message ready to store; JSON columns are already canonical strings."""

    uid: str
    role: str
    #: The text content; for a list of parts, their readable text (content_text), which
    #: the search index reads from this column in one pass instead of walking the JSON.
    content: str | None
    parts: str | None  # JSON list, when the content is a list of parts
    tool_calls: str | None
    tool_call_id: str | None
    tool_name: str | None
    reasoning: str | None
    finish_reason: str | None
    token_count: int | None
    timestamp: float | None  # None: stamped at commit
    display_kind: str | None
    state: str
    tool_call_total: int  # how many tool calls this message makes

    def same_payload(self, stored: Message) -> bool:
        """Whether `stored` holds the same message (what was said, not when)."""
        return (
            self.role == stored.role
            and (self.parts is not None or self.content == (stored.content if isinstance(stored.content, str) else None))
            and self.parts == (None if not isinstance(stored.content, list) else dump_json(stored.content, "content"))
            and self.tool_calls == (None if stored.tool_calls is None else dump_json(stored.tool_calls, "tool_calls"))
            and self.tool_call_id == stored.tool_call_id
            and self.tool_name == stored.tool_name
            and self.reasoning == stored.reasoning
        )


# Fields of a stored Message that may ride along in input (a loaded transcript handed back)
# and are ignored: the store assigns them.
_ASSIGNED_FIELDS = frozenset({"id", "session_id", "seq"})
_ROLES = frozenset(r.value for r in Role)
_STATES = frozenset(s.value for s in MessageState)
_ACTIVE = MessageState.ACTIVE.value
_INPUT_FIELDS = frozenset(
    {
        "uid", "role", "content", "tool_calls", "tool_call_id", "tool_name", "reasoning",
        "finish_reason", "token_count", "timestamp", "display_kind", "state",
    }
)


def prepare_message(raw: Message | Mapping[str, Any], index: int = 0, limits: MessageLimits = MessageLimits(),
                    *, where: str | None = None) -> NewMessage:
    """Validate one message of an append or an import; `index` (or `where`) names it in errors."""
    where = where or f"message {index}"
    if isinstance(raw, Message):
        data: Mapping[str, Any] = raw.to_dict()
    elif isinstance(raw, Mapping):
        data = raw
    else:
        raise InvalidInput(f"{where}: expected a dict or Message, not {type(raw).__name__}")
    unknown = set(data) - _INPUT_FIELDS - _ASSIGNED_FIELDS
    if unknown:
        raise InvalidInput(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")

    role = data.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise InvalidInput(f"{where}: role must be one of system, user, assistant, tool (got {role!r})")
    role = getattr(role, "value", role)  # a Role member becomes its plain string

    uid = data.get("uid")
    if uid is None:
        uid = new_uid()
    elif not isinstance(uid, str) or not uid or len(uid) > MAX_UID_LENGTH or "\x00" in uid:
        raise InvalidInput(f"{where}: uid must be non-empty text of at most {MAX_UID_LENGTH} characters")
    check_unicode(uid, f"{where}: uid")

    content = data.get("content")
    text: str | None = None
    parts: str | None = None
    if isinstance(content, str):
        text = check_unicode(content, f"{where}: content")
        size = len(text.encode("utf-8"))
    elif isinstance(content, list):
        if len(content) > limits.max_parts:
            raise InvalidInput(f"{where}: content has {len(content):,} parts; the limit is {limits.max_parts:,} "
                               "parts per message (MessageLimits.max_parts)")
        parts = dump_json(content, f"{where}: content")
        text = check_unicode(content_text(content), f"{where}: content")
        size = len(parts.encode("utf-8"))
    elif content is not None:
        raise InvalidInput(f"{where}: content must be text, a list of parts or None")
    else:
        size = 0
    if size > limits.max_content_bytes:
        raise InvalidInput(f"{where}: content is {size:,} bytes; the limit is {limits.max_content_bytes:,} bytes "
                           "per message (MessageLimits.max_content_bytes)")

    tool_calls = data.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        raise InvalidInput(f"{where}: tool_calls must be a list")
    tool_calls_json = None if tool_calls is None else dump_json(tool_calls, f"{where}: tool_calls")

    token_count = data.get("token_count")
    if token_count is not None:
        check_count(token_count, f"{where}: token_count")

    state = data.get("state") or _ACTIVE
    if not isinstance(state, str) or state not in _STATES:
        raise InvalidInput(f"{where}: state must be one of active, compacted, rewound")

    reasoning = data.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise InvalidInput(f"{where}: reasoning must be text")
    if reasoning is not None:
        check_unicode(reasoning, f"{where}: reasoning")

    return NewMessage(
        uid=uid,
        role=role,
        content=text,
        parts=parts,
        tool_calls=tool_calls_json,
        tool_call_id=check_label(data.get("tool_call_id"), f"{where}: tool_call_id"),
        tool_name=check_label(data.get("tool_name"), f"{where}: tool_name"),
        reasoning=reasoning,
        finish_reason=check_label(data.get("finish_reason"), f"{where}: finish_reason"),
        token_count=token_count,
        timestamp=check_stored_time(data.get("timestamp"), f"{where}: timestamp"),
        display_kind=check_label(data.get("display_kind"), f"{where}: display_kind"),
        state=getattr(state, "value", state),
        tool_call_total=len(tool_calls) if tool_calls else 0,
    )


def prepare_messages(messages: Any, limits: MessageLimits = MessageLimits()) -> list[NewMessage]:
    """Validate an append's input: one message or an iterable of them."""
    if isinstance(messages, (Message, Mapping)):
        messages = [messages]
    elif isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__"):
        raise InvalidInput(f"messages must be a message or a list of messages, not {type(messages).__name__}")
    batch = [prepare_message(m, i, limits) for i, m in enumerate(messages)]
    if not batch:
        raise InvalidInput("no messages to append")
    return batch
