"""The data model: plain dataclasses and enums, the bounds on what is stored, and the text
and JSON forms every backend shares. Nothing here does I/O; the checks of caller input
are in sessiondb.inputs."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

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
    """How large one message and one session's metadata may be, for append, import and
    the session calls alike (InvalidInput naming the field and the limit past them).
    `open_store(limits=...)` sets them.

    - `max_content_bytes`: the content's UTF-8 (the text, or the parts as JSON);
      `max_parts` the number of parts in a list content.
    - `max_reasoning_bytes`: the reasoning's UTF-8.
    - `max_tool_calls`: the tool calls of one message; `max_tool_calls_bytes` their JSON
      (names, ids and arguments). Each call's id and name are short labels
      (MAX_NAME_LENGTH), as `tool_call_id`, `tool_name` and `name` are.
    - `max_message_bytes`: content, reasoning and tool calls of one message together.
    - `max_metadata_bytes`: a session's metadata as JSON, after a patch is merged in;
      `max_metadata_value_bytes` each of its values as JSON.
    """

    max_content_bytes: int = 16 * 1024 * 1024
    max_parts: int = 10_000
    max_reasoning_bytes: int = 4 * 1024 * 1024
    max_tool_calls: int = 1_000
    max_tool_calls_bytes: int = 4 * 1024 * 1024
    max_message_bytes: int = 20 * 1024 * 1024
    max_metadata_bytes: int = 256 * 1024
    max_metadata_value_bytes: int = 64 * 1024

    def __post_init__(self) -> None:
        for name in (f.name for f in fields(self)):
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
#: The display kind of a compacted original whose text a retention rule dropped: its row
#: stays (uid, role, order, time), so the message is still known when handed back.
TEXT_DROPPED = "text_dropped"


def is_activity(role: str, display_kind: str | None) -> bool:
    """Whether a message of this role and display kind is user activity (moves a session's
    last_activity_at)."""
    return role in ACTIVITY_ROLES and display_kind != INTERNAL_NOTIFICATION


#: Sessions a lineage walk visits at most (a guard against runaway chains).
MAX_HOPS = 1000


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


#: Message's fields, in the order `message_of` takes their values.
MESSAGE_FIELDS = tuple(f.name for f in fields(Message))
_new, _set = object.__new__, object.__setattr__


def message_of(values: tuple[Any, ...]) -> Message:
    """The Message of every field's value, in MESSAGE_FIELDS' order. Every message a store
    reads or appends is made here: a frozen dataclass's own __init__ sets each field
    through object.__setattr__, and for Message's 15 fields that took twice the time of
    setting its attribute dict whole (1.9 µs against 1.2 µs a message)."""
    m = _new(Message)
    _set(m, "__dict__", dict(zip(MESSAGE_FIELDS, values, strict=True)))  # a value missing is an error
    return m


class ModelMessage(dict):
    """A message as a model provider takes it (what `resume` returns), carrying its identity.

    The dict holds only the standard keys (role, content, tool_calls, tool_call_id, name,
    reasoning), so json.dumps and provider SDKs see nothing internal; the stored uid rides
    along as an attribute, which `append` and `flush` read back: a resumed conversation
    handed to a write stores nothing twice (S-01, S-44). Copies made with copy or pickle
    keep the uid; `dict(m)` or a JSON round trip drop it, and `flush` then matches the
    message by its content and position instead.
    """

    __slots__ = ("uid",)

    def __init__(self, fields: Mapping[str, Any], uid: str) -> None:
        super().__init__(fields)
        self.uid = uid


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


@dataclass(frozen=True)
class Route:
    """A routing entry as stored: the contract's RouteEntry."""

    key: str
    session_id: str
    profile: str
    state: str
    turn_started_at: float | None
    updated_at: float

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


@dataclass(frozen=True)
class Policy:
    """What a store keeps of one source's conversations (`source` None: of every source
    without rules of its own). Each rule is optional; a conversation (a compression chain,
    judged whole) goes when any rule takes it (store/retention.py):

    - inactive_after: seconds; one whose every session was last active longer ago goes;
    - keep_last: the newest N conversations are kept, the older go;
    - compacted_after: seconds; the text of compacted originals older than this is dropped
      (each row stays, without its text, so a transcript handed back is still known);
    - never_active_after: seconds; a session opened by a key and never used goes."""

    source: str | None = None
    inactive_after: float | None = None
    keep_last: int | None = None
    compacted_after: float | None = None
    never_active_after: float | None = None
    updated_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Hold:
    """A legal hold: no rule and no forget removes the conversations of this user (or this
    session's conversation) until it is released."""

    user_id: str | None
    session_id: str | None
    reason: str
    placed_at: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Policies:
    """A store's retention rules and legal holds (store.policy())."""

    rules: list[Policy]
    holds: list[Hold]

    def to_dict(self) -> dict[str, Any]:
        return {"rules": [r.to_dict() for r in self.rules], "holds": [h.to_dict() for h in self.holds]}


@dataclass
class PolicyReport:
    """What applying the retention rules removed (or, in a dry run, would remove).

    `removed`: each conversation taken, as (its first session's id, the rule that took it);
    `kept`: conversations a rule matched and that stay, as (id, why: pinned, or the hold);
    `refused`: why nothing was removed (rules that would remove every conversation they
    cover are refused in a sentence)."""

    dry_run: bool
    removed: list[tuple[str, str]] = field(default_factory=list)
    sessions: int = 0
    messages: int = 0
    compacted_dropped: int = 0
    bytes_released: int = 0  # freed pages handed back to the file system after the sweep
    kept: list[tuple[str, str]] = field(default_factory=list)
    refused: str | None = None

    def summary(self) -> str:
        if self.refused:
            return f"refused, nothing removed: {self.refused}"
        verb = "would remove" if self.dry_run else "removed"
        text = (f"{verb} {len(self.removed)} conversation(s) ({self.sessions} session(s), {self.messages} "
                f"message(s)) and the text of {self.compacted_dropped} compacted original(s)")
        if self.bytes_released:
            text += f"; {self.bytes_released:,} bytes handed back to the file system"
        if self.kept:
            text += f"; kept {len(self.kept)} a rule matched (pinned or held)"
        return text + (" (a dry run: nothing changed)" if self.dry_run else "")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "summary": self.summary()}


@dataclass
class ForgetReceipt:
    """What forget removed (or, in a dry run, would remove), and the scan of the raw files
    that shows whether any copy of it remains (S-55).

    `fragments` pieces of the erased texts (the first bytes of each, spread over all of
    them) were looked for in every file of `scanned`. `remaining` names, in a sentence
    each, a file sessiondb keeps that still holds one and what to do; `copies` are copies
    sessiondb made and does not rewrite itself (backups, retired-WAL captures) that hold
    one, each with the command that removes it; `copies_removed` were removed, as every
    row they held is in the store too (a retired-WAL capture already brought back). `notes` say what the engine keeps beyond
    sessiondb's files (a PostgreSQL server's own WAL and backups)."""

    asked: dict[str, Any]  # the selectors given
    dry_run: bool = False
    sessions: list[str] = field(default_factory=list)
    messages: int = 0
    usage_rows: int = 0
    turns: int = 0
    spooled_batches: int = 0
    checkpoint_files: int = 0  # the turns' snapshots of the agent's working tree, and their contents
    bytes_released: int = 0  # freed pages handed back to the file system
    fragments: int = 0
    scanned: list[str] = field(default_factory=list)
    scanned_bytes: int = 0
    remaining: list[str] = field(default_factory=list)
    copies: list[tuple[str, str]] = field(default_factory=list)
    copies_removed: list[str] = field(default_factory=list)  # copies whose rows the store holds too
    notes: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Nothing erased is left in any file scanned."""
        return not self.remaining and not self.copies

    def summary(self) -> str:
        """The receipt in one sentence."""
        if not self.sessions:
            return "nothing matched: no session was removed"
        what = (f"{len(self.sessions)} session(s), {self.messages} message(s), {self.usage_rows} usage row(s), "
                f"{self.turns} turn record(s), {self.spooled_batches} spooled batch(es)")
        if self.checkpoint_files:
            what += f", {self.checkpoint_files} checkpoint file(s)"
        if self.dry_run:
            return f"would remove {what} (a dry run: nothing changed)"
        if not self.fragments:
            return (f"removed {what}; their texts were too short to be told apart from others' in the files, "
                    "so no scan vouches for them")
        scan = f"{len(self.scanned)} file(s), {self.scanned_bytes} bytes, scanned for {self.fragments} fragment(s)"
        if self.clean:
            return f"removed {what}; {scan}: no copy remains"
        left = len(self.remaining) + len(self.copies)
        return f"removed {what}; {scan}: {left} file(s) still hold a copy (listed, with what to do)"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean, "summary": self.summary()}


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
    never found. `found_by` says how: 'words' (a search, or recall's words), 'meaning'
    (recall's vectors, sessiondb.embedding) or 'words and meaning'; `note`, on a recall's
    hits, says why its meaning was not used where it was not (no embedder, or its trouble).
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
    found_by: str = "words"
    note: str | None = None

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


@dataclass(kw_only=True)
class DoctorReport:
    """What every doctor's report says, whatever the backend adds: the damage (`none` when
    there is none), what it is, what makes the exit status 1, what to do next, and what a
    repair did."""

    damage: str = "none"
    findings: list[str] = field(default_factory=list)  # what the damage is
    problems: list[str] = field(default_factory=list)  # everything that makes the exit status 1
    steps: list[str] = field(default_factory=list)  # what to do next
    repair: dict[str, Any] | None = None  # what --repair did

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "healthy": self.healthy}


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


_HALF = re.compile("[\ud800-\udfff]")  # in a str, a surrogate is always unpaired


def shown(text: str) -> str:
    """`text` as it leaves sessiondb in UTF-8 (a terminal, a file, an HTTP or MCP answer):
    half a character (an unpaired surrogate, which a message's text may hold and which has
    no UTF-8 form) written as its escape `\\udXXX`, everything else as it is."""
    return text if text.isascii() else _HALF.sub(lambda half: f"\\u{ord(half.group()):04x}", text)


def json_text(value: Any, **options: Any) -> str:
    """`value` as JSON text in UTF-8, its characters as they are (not \\u-escaped) but half
    a character, written as JSON's own escape `\\udXXX`, which reads back exactly."""
    return shown(json.dumps(value, ensure_ascii=False, **options))


def dump_json(value: Any, what: str) -> str:
    """Canonical JSON (sorted keys, no NaN): equal values always give equal strings."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} is not JSON-serialisable: {exc}") from None
