"""Validation of caller input: what the store accepts, checked once, before anything is written.

Every backend refuses the same bad input with the same message because the neutral layer
(store/checked.py) and the export format (formats.py) check it here. What every backend
derives alike from checked input lives here too (continuation titles, metadata patches, a
child session's row), so the backends cannot drift apart. Nothing here does I/O.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from itertools import islice
from datetime import datetime
from typing import Any, NamedTuple

from .errors import InvalidInput, MessageConflict, MetadataTooLarge
from .model import (
    INTERNAL_NOTIFICATION, MAX_COUNT, MAX_NAME_LENGTH, MAX_SESSION_ID_LENGTH, MAX_TIMESTAMP, MAX_TITLE_LENGTH,
    MAX_UID_LENGTH, TEXT_DROPPED, Lease, Message, MessageLimits, MessageState, ModelMessage, Role, Session,
    content_text, dump_json,
)


def new_session_id(now: float) -> str:
    """A readable, time-sortable id: `20261129_101500_3f9a1c2b`."""
    return f"{datetime.fromtimestamp(now).strftime('%Y%m%d_%H%M%S')}_{uuid.uuid4().hex[:8]}"


# --- uids ------------------------------------------------------------------------------
#
# Message uids: 128 random bits as 32 hex digits, drawn from the kernel a page at a time.
#
# A uid is what makes an append idempotent: two messages of one session with the same uid
# are one message. So uids must never repeat, in any process, and uuid.uuid4() gives that
# at the price of a getrandom call per message. That call releases the GIL, and with eight
# threads appending, each release is a hand-off the committing thread waits behind. Here
# one call fills a buffer for 256 uids.
#
# A forked child must never hand out the uids its parent's buffer still holds (the parent
# would hand them out too, and a child's message would be taken for a retry of the
# parent's), so the child drops the buffer before it runs anything else.

_UID_BYTES = 16
_BUFFER_BYTES = 256 * _UID_BYTES

_lock = threading.Lock()
_buffer = b""
_offset = 0


def new_uid() -> str:
    """A fresh uid, unique across processes (128 bits from os.urandom)."""
    global _buffer, _offset
    with _lock:
        if _offset >= len(_buffer):
            _buffer, _offset = os.urandom(_BUFFER_BYTES), 0
        start = _offset
        _offset = start + _UID_BYTES
        return _buffer[start:start + _UID_BYTES].hex()


def _forget_after_fork() -> None:
    global _buffer, _offset, _lock
    _lock = threading.Lock()  # the parent may have held it at the fork
    _buffer, _offset = b"", 0


os.register_at_fork(after_in_child=_forget_after_fork)


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
    """Refuse an id, label or name holding half a character: an unpaired surrogate (from a
    JSON "\\ud800" escape or a surrogate-escaped file name) has no UTF-8 form. (A message's
    text keeps one, escaped where it is stored: store/sql.py.)"""
    utf8_size(value, what)
    return value


def utf8_size(value: str, what: str) -> int:
    """The bytes of `value` in UTF-8, refusing what check_unicode refuses. Encoded once at
    most: ASCII text (known without a scan) is its own length."""
    if value.isascii():
        return len(value)
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode text: it holds an unpaired surrogate at "
                           f"character {exc.start}") from None


def text_size(value: str) -> int:
    """The bytes of a message's text in UTF-8, half a character (an unpaired surrogate,
    which the store keeps: store/sql.py) counted as the three bytes its code point takes."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


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


# --- the plain arguments of store calls ------------------------------------------------
# The small arguments every call shares (ids, flags, counts, limits, leases), each refused
# with InvalidInput naming the argument.

MAX_PAGE = 1000  # rows a listing or a search returns at most
MAX_TTL = 7 * 24 * 3600.0  # a compaction lease lasts at most a week between refreshes
MAX_ROW_ID = 2**63 - 1  # the largest id or position a 64-bit INTEGER (SQLite) or BIGINT column holds


def check_session_ref(value: Any) -> str:
    """The id of a stored session, as a call names it: checked as a label, since ids stored
    before today's rules for new ids (check_session_id) must still name their sessions."""
    return check_label(value, "session_id", required=True)


def storable_label(value: str) -> bool:
    """Whether a session could be stored with `value` as a label (a user id...): a lookup by
    one that could not finds nothing, where check_label would refuse it."""
    try:
        check_label(value, "label")
    except InvalidInput:
        return False
    return True


def check_session_refs(value: Any) -> list[str]:
    """Ids of stored sessions as one call names many (`_many`), each checked as check_session_ref checks one."""
    return _many(value, "session", check_session_ref)


def check_message_ids(value: Any) -> list[int]:
    """Ids of stored messages as one call names many (`_many`), each a non-negative integer."""
    return _many(value, "message", lambda v: check_nonnegative(v, "a message id"))


def _many(value: Any, noun: str, check: Callable[[Any], Any]) -> list[Any]:
    """Ids one call reads many of: a list (any iterable but text) of at most MAX_PAGE, each
    passed through `check`; repeats read once."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInput(f"{noun}_ids is a list of {noun} ids, not {type(value).__name__}")
    ids = list(islice(value, MAX_PAGE + 1))
    if len(ids) > MAX_PAGE:
        raise InvalidInput(f"{noun}_ids names more than {MAX_PAGE:,} {noun}s; one read takes at most {MAX_PAGE:,}")
    return list(dict.fromkeys(check(v) for v in ids))


def check_flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, not {value!r}")
    return value


def check_nonnegative(value: Any, what: str, *, optional: bool = False) -> int | None:
    """A position or a number of rows: a non-negative integer a 64-bit column holds, as
    SQLite's and PostgreSQL's ids are (None allowed if `optional`)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_ROW_ID:
        raise InvalidInput(f"{what} must be an integer from 0 to {MAX_ROW_ID:,}, not {value!r}")
    return value


def check_limit(value: Any) -> int:
    value = check_nonnegative(value, "limit")
    if not 1 <= value <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
    return value


def check_cost(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InvalidInput(f"cost_usd must be a non-negative number, not {value!r}")
    return float(value)


def check_ttl(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TTL:
        raise InvalidInput(f"ttl must be a number of seconds above 0 and at most {MAX_TTL:.0f}, not {value!r}")
    return float(value)


def check_lease(value: Any) -> Lease:
    if not isinstance(value, Lease):
        raise InvalidInput(f"expected the Lease that begin_compaction returned, not {type(value).__name__}")
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


def check_count(value: Any, what: str, least: int = 0) -> int:
    """A counter to store (a message's or a usage row's tokens): an integer from `least` up to MAX_COUNT."""
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_COUNT:
        raise InvalidInput(f"{what} must be an integer from {least} to {MAX_COUNT:,}, not {value!r}")
    return value


def check_metadata(metadata: Any, limits: MessageLimits = MessageLimits(), what: str = "metadata") -> str:
    """A session's metadata (or a patch of it) as canonical JSON, each value and the whole
    within `limits`."""
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping):
        raise InvalidInput(f"{what} must be a mapping, not {type(metadata).__name__}")
    text = dump_json(dict(metadata), what)
    size = utf8_size(text, what)
    if size > limits.max_metadata_value_bytes:  # only then can one value be past its limit
        for key, value in metadata.items():
            value_size = utf8_size(dump_json(value, f"{what} {key!r}"), f"{what} {key!r}")
            if value_size > limits.max_metadata_value_bytes:
                raise MetadataTooLarge(
                    f"{what} {key!r} is {value_size:,} bytes as JSON; the limit is {limits.max_metadata_value_bytes:,} "
                    "bytes per value (MessageLimits.max_metadata_value_bytes)")
    _check_metadata_size(size, limits.max_metadata_bytes, what)
    return text


def _check_metadata_size(size: int, limit: int, what: str) -> None:
    if size > limit:
        raise MetadataTooLarge(f"{what} is {size:,} bytes as JSON; the limit is {limit:,} bytes "
                           "per session (MessageLimits.max_metadata_bytes)")


def model_role(stored: Message) -> str:
    """The role a model is shown: an internal notification is a plain user turn (S-09)."""
    return Role.USER.value if stored.display_kind == INTERNAL_NOTIFICATION else stored.role


class NewMessage(NamedTuple):
    """A validated message ready to store; JSON columns are already canonical strings.

    A named tuple, immutable as a frozen dataclass would be, made in a fifth of the time
    (a frozen dataclass sets each of its fields through object.__setattr__): one is made
    for every message of every append."""

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
        """Whether `stored` holds the same message (what was said, not when); one whose text
        a retention rule dropped is known by its uid and role alone."""
        if stored.display_kind == TEXT_DROPPED:
            return self.role in (stored.role, model_role(stored))
        return self.says(stored) and self.reasoning == stored.reasoning

    def says(self, stored: Message) -> bool:
        """Whether `stored` shows a model what this message does: role, content and tool
        fields (not the reasoning, which a provider's SDK may drop)."""
        return (
            self.role in (stored.role, model_role(stored))  # a resumed notification says 'user' (S-09)
            and (self.parts is not None or self.content == (stored.content if isinstance(stored.content, str) else None))
            and self.parts == (None if not isinstance(stored.content, list) else dump_json(stored.content, "content"))
            and self.tool_calls == (None if stored.tool_calls is None else dump_json(stored.tool_calls, "tool_calls"))
            and self.tool_call_id == stored.tool_call_id
            and self.tool_name == stored.tool_name
        )


# Fields of a stored Message that may ride along in input (a loaded transcript handed back)
# and are ignored: the store assigns them.
_ASSIGNED_FIELDS = frozenset({"id", "session_id", "seq"})
# Fields other reads put on a message, read back as the stored field they spell: a resumed
# tool message's `name` is its tool_name, an export record's `parts` is content as parts.
_READ_FIELDS = frozenset({"name", "parts"})
_ROLES = frozenset(r.value for r in Role)
_STATES = frozenset(s.value for s in MessageState)
_ACTIVE = MessageState.ACTIVE.value
_INPUT_FIELDS = frozenset(
    {
        "uid", "role", "content", "tool_calls", "tool_call_id", "tool_name", "reasoning",
        "finish_reason", "token_count", "timestamp", "display_kind", "state",
    }
)
_KNOWN_FIELDS = _INPUT_FIELDS | _ASSIGNED_FIELDS | _READ_FIELDS


def _is_mapping(value: Any) -> bool:
    # A plain dict first: isinstance against the Mapping ABC costs a microsecond a message.
    return type(value) is dict or isinstance(value, Mapping)


def identity_of(raw: Any) -> Any:
    """The uid a message handed to a write already carries (given, or kept by a read), or None."""
    if isinstance(raw, Message):
        return raw.uid
    if not _is_mapping(raw):
        return None
    uid = raw.get("uid")
    return raw.uid if uid is None and isinstance(raw, ModelMessage) else uid


def prepare_message(raw: Message | Mapping[str, Any], index: int = 0, limits: MessageLimits = MessageLimits(),
                    *, where: str | None = None) -> NewMessage:
    """Validate one message of an append or an import; `index` (or `where`) names it in errors."""
    where = where or f"message {index}"
    if isinstance(raw, Message):
        data: Mapping[str, Any] = raw.to_dict()
    elif _is_mapping(raw):
        data = raw
    else:
        raise InvalidInput(f"{where}: expected a dict or Message, not {type(raw).__name__}")
    if not _KNOWN_FIELDS.issuperset(data):
        unknown = data.keys() - _KNOWN_FIELDS
        raise InvalidInput(f"{where}: unknown field(s) {', '.join(sorted(map(str, unknown)))}")

    role = data.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise InvalidInput(f"{where}: role must be one of system, user, assistant, tool (got {role!r})")
    if type(role) is not str:  # a Role member becomes its plain string (a plain one skips getattr's miss)
        role = getattr(role, "value", role)

    uid = identity_of(raw)
    if uid is None:
        uid = new_uid()  # hex digits: nothing to check
    elif not isinstance(uid, str) or not uid or len(uid) > MAX_UID_LENGTH or "\x00" in uid:
        raise InvalidInput(f"{where}: uid must be non-empty text of at most {MAX_UID_LENGTH} characters")
    else:
        check_unicode(uid, f"{where}: uid")

    content = data.get("content")
    if data.get("parts") is not None:
        # A read's record of list content: the parts, beside (for export records) their text.
        parts_given = data["parts"]
        if not isinstance(parts_given, list):
            raise InvalidInput(f"{where}: parts must be a list")
        if content is not None and content != content_text(parts_given):
            raise InvalidInput(f"{where}: content and parts disagree; give one of them")
        content = parts_given
    text: str | None = None
    parts: str | None = None
    if isinstance(content, str):
        text = content
        size = text_size(content)
    elif isinstance(content, list):
        if len(content) > limits.max_parts:
            raise InvalidInput(f"{where}: content has {len(content):,} parts; the limit is {limits.max_parts:,} "
                               "parts per message (MessageLimits.max_parts)")
        parts = dump_json(content, f"{where}: content")
        text = content_text(content)
        size = text_size(parts)
    elif content is not None:
        raise InvalidInput(f"{where}: content must be text, a list of parts or None")
    else:
        size = 0
    if size > limits.max_content_bytes:
        raise InvalidInput(f"{where}: content is {size:,} bytes; the limit is {limits.max_content_bytes:,} bytes "
                           "per message (MessageLimits.max_content_bytes)")

    tool_calls = data.get("tool_calls")
    tool_calls_json, tool_calls_size = None, 0
    if tool_calls is not None:
        if not isinstance(tool_calls, list):
            raise InvalidInput(f"{where}: tool_calls must be a list")
        if len(tool_calls) > limits.max_tool_calls:
            raise InvalidInput(f"{where}: tool_calls has {len(tool_calls):,} calls; the limit is "
                               f"{limits.max_tool_calls:,} per message (MessageLimits.max_tool_calls)")
        tool_calls_json = dump_json(tool_calls, f"{where}: tool_calls")
        tool_calls_size = text_size(tool_calls_json)
        if tool_calls_size > limits.max_tool_calls_bytes:
            raise InvalidInput(f"{where}: tool_calls is {tool_calls_size:,} bytes as JSON; the limit is "
                               f"{limits.max_tool_calls_bytes:,} bytes per message (MessageLimits.max_tool_calls_bytes)")
        for number, call in enumerate(tool_calls):
            _check_call_labels(call, f"{where}: tool call {number}")

    token_count = data.get("token_count")
    if token_count is not None:
        check_count(token_count, f"{where}: token_count")

    state = data.get("state") or _ACTIVE
    if not isinstance(state, str) or state not in _STATES:
        raise InvalidInput(f"{where}: state must be one of active, compacted, rewound")

    reasoning = data.get("reasoning")
    if reasoning is not None and not isinstance(reasoning, str):
        raise InvalidInput(f"{where}: reasoning must be text")
    reasoning_size = 0 if reasoning is None else text_size(reasoning)
    if reasoning_size > limits.max_reasoning_bytes:
        raise InvalidInput(f"{where}: reasoning is {reasoning_size:,} bytes; the limit is "
                           f"{limits.max_reasoning_bytes:,} bytes per message (MessageLimits.max_reasoning_bytes)")
    total = size + reasoning_size + tool_calls_size
    if total > limits.max_message_bytes:
        raise InvalidInput(f"{where}: content, reasoning and tool calls are {total:,} bytes together; the limit is "
                           f"{limits.max_message_bytes:,} bytes per message (MessageLimits.max_message_bytes)")

    tool_name = data.get("tool_name")
    if data.get("name") is not None:
        if role != Role.TOOL.value:
            raise InvalidInput(f"{where}: name is taken only on a tool message (as its tool_name)")
        if tool_name is not None and tool_name != data["name"]:
            raise InvalidInput(f"{where}: name {data['name']!r} and tool_name {tool_name!r} disagree")
        tool_name = data["name"]

    # The optional labels are checked where given: absent (the common case), they cost no
    # message text and no call.
    tool_call_id, finish_reason = data.get("tool_call_id"), data.get("finish_reason")
    timestamp, display_kind = data.get("timestamp"), data.get("display_kind")
    if tool_call_id is not None:
        tool_call_id = check_label(tool_call_id, f"{where}: tool_call_id")
    if tool_name is not None:
        tool_name = check_label(tool_name, f"{where}: tool_name")
    if finish_reason is not None:
        finish_reason = check_label(finish_reason, f"{where}: finish_reason")
    if timestamp is not None:
        timestamp = check_stored_time(timestamp, f"{where}: timestamp")
    if display_kind is not None:
        display_kind = check_label(display_kind, f"{where}: display_kind")
    if type(state) is not str:
        state = getattr(state, "value", state)
    # In NewMessage's field order: made by keyword, one took twice the time (one per message).
    return NewMessage(uid, role, text, parts, tool_calls_json, tool_call_id, tool_name, reasoning, finish_reason,
                      token_count, timestamp, display_kind, state, len(tool_calls) if tool_calls else 0)


def _check_call_labels(call: Any, where: str) -> None:
    """A tool call's id and function name (OpenAI's shape, or a flat `name`) are short labels."""
    if not _is_mapping(call):
        return
    function = call.get("function")
    labels = {"id": call.get("id"), "name": call.get("name"),
              "function name": function.get("name") if _is_mapping(function) else None}
    for label, value in labels.items():
        if isinstance(value, str) and len(value) > MAX_NAME_LENGTH:
            raise InvalidInput(f"{where}: its {label} is {len(value):,} characters; the limit is {MAX_NAME_LENGTH}")


def prepare_messages(messages: Any, limits: MessageLimits = MessageLimits()) -> list[NewMessage]:
    """Validate an append's input: one message or an iterable of them."""
    if isinstance(messages, Message) or _is_mapping(messages):
        messages = [messages]
    elif isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__"):
        raise InvalidInput(f"messages must be a message or a list of messages, not {type(messages).__name__}")
    batch = [prepare_message(m, i, limits) for i, m in enumerate(messages)]
    if not batch:
        raise InvalidInput("no messages to append")
    return batch


def prepare_summary(messages: Any, limits: MessageLimits = MessageLimits()) -> list[NewMessage]:
    """Validate a compaction's summary: an append's input in which each uid comes once and
    every message is active. The summary becomes the live conversation: a message in any
    other state would leave it empty, and a uid twice would be one row stored twice."""
    batch = prepare_messages(messages, limits)
    seen: set[str] = set()
    for index, m in enumerate(batch):
        if m.uid in seen:
            raise InvalidInput(f"summary message {index}: uid {m.uid!r} appears twice in the summary")
        seen.add(m.uid)
        if m.state != _ACTIVE:
            raise InvalidInput(f"summary message {index}: a summary message must be active, not {m.state}")
    return batch


def check_kept(index: int, m: NewMessage, stored: Message, session_id: str) -> None:
    """Refuse summary message `index` when its uid names a stored message of the session
    that the summary cannot keep verbatim: one with other content, or one no longer live
    (rewound or compacted: kept as it is, the summary would be hidden with it)."""
    if not m.same_payload(stored):
        raise MessageConflict(
            f"summary message {index}: uid {m.uid!r} is already stored in session {session_id} "
            "with different content; give the summary message its own uid"
        )
    if stored.state != _ACTIVE:
        raise MessageConflict(
            f"summary message {index}: uid {m.uid!r} is a {stored.state} message of session {session_id} "
            "and a summary keeps only live messages; give the summary message its own uid"
        )


_NUMBERED = re.compile(r"^(.*) #(\d+)$")


def continuation_titles(title: str) -> list[str]:
    """'Trip' -> ['Trip #2', 'Trip #3', ...]: the titles a continuation may take, in order,
    each within MAX_TITLE_LENGTH (a backend takes the first that is free)."""
    match = _NUMBERED.match(title)
    base, number = (match.group(1), int(match.group(2))) if match else (title, 1)
    return [base[: MAX_TITLE_LENGTH - len(f" #{n}")].rstrip() + f" #{n}" for n in range(number + 1, number + 100)]


def patched_metadata(current: Mapping[str, Any], patch: Mapping[str, Any], max_bytes: int) -> str:
    """`current` with `patch` merged in (a None value removes the key), as canonical JSON;
    InvalidInput if the merged metadata is past `max_bytes` (MessageLimits.max_metadata_bytes)."""
    merged = dict(current)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    text = json.dumps(merged, sort_keys=True, ensure_ascii=False)
    _check_metadata_size(utf8_size(text, "metadata"), max_bytes, "the session's metadata with this patch")
    return text


def child_session(parent: Session, relation: str, **values: Any) -> dict[str, Any]:
    """The row of a session that continues or branches from `parent`: the parent's surface,
    key, chat, model and metadata, the relation to it, and `values` (its id, title, start)."""
    return {
        "source": parent.source, "profile": parent.profile, "session_key": parent.session_key,
        "user_id": parent.user_id, "chat_id": parent.chat_id, "chat_type": parent.chat_type,
        "thread_id": parent.thread_id, "model": parent.model, "parent_session_id": parent.id,
        "parent_relation": relation, "metadata": json.dumps(parent.metadata, sort_keys=True, ensure_ascii=False),
        **values,
    }
