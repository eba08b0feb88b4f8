"""Typed commands: a store call after the neutral layer validated and normalised it.

`store/checked.py` turns every public call into one of these (or into plain checked
arguments where a call takes only an id); a backend receives nothing else, so it never
re-validates and never sees a caller's raw input. Times in commands are already read from
the handle's clock, except where a lease is judged (see below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..model import Lease
from ..inputs import NewMessage
from ..query import Query
from ..recall import Recall


# --- sessions ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreateSession:
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
    parent_relation: str | None
    started_at: float
    metadata: str  # canonical JSON text


@dataclass(frozen=True, slots=True)
class ListSessions:
    source: str | None
    include_archived: bool
    include_hidden: bool
    pinned: bool | None
    since: float | None
    until: float | None
    limit: int
    cursor: str | None


@dataclass(frozen=True, slots=True)
class EndSession:
    reason: str
    now: float


@dataclass(frozen=True, slots=True)
class ReopenSession:
    pass


@dataclass(frozen=True, slots=True)
class SetTitle:
    title: str | None


@dataclass(frozen=True, slots=True)
class SetFlags:
    flags: dict[str, bool]  # only the flags given


@dataclass(frozen=True, slots=True)
class PatchMetadata:
    patch: dict[str, Any]  # None values remove keys
    max_bytes: int  # what the merged metadata may hold (MessageLimits.max_metadata_bytes)


#: What `change_session` applies to one session row; never user activity except EndSession's time.
SessionChange = EndSession | ReopenSession | SetTitle | SetFlags | PatchMetadata


# --- messages and lineage ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Append:
    session_id: str
    batch: tuple[NewMessage, ...]
    now: float


@dataclass(frozen=True, slots=True)
class ReadTranscript:
    session_id: str
    include_compacted: bool
    limit: int | None
    before: int | None
    after: int | None
    order: str  # "asc" or "desc"


# Lease commands carry the handle's clock, not a time: a lease is judged at the instant
# its transaction runs, and handles on one store share a writer but not a clock.


@dataclass(frozen=True, slots=True)
class BeginCompaction:
    session_id: str
    holder: str | None
    ttl: float
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class RefreshCompaction:
    lease: Lease
    ttl: float | None
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class CommitCompaction:
    lease: Lease
    batch: tuple[NewMessage, ...]
    mode: str  # "in_place" or "rotate"
    clock: Callable[[], float]


@dataclass(frozen=True, slots=True)
class Rewind:
    session_id: str
    to_message_id: int


@dataclass(frozen=True, slots=True)
class Branch:
    session_id: str
    at_message_id: int
    new_id: str
    title: str | None
    started_at: float


# --- usage, search, maintenance -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordUsage:
    session_id: str
    model: str
    provider: str
    task: str
    amounts: dict[str, float]  # input_tokens ... cost_usd, each checked


@dataclass(frozen=True, slots=True)
class Search:
    query: Query | Recall  # a Recall (a question) for Backend.recall
    profile: str | None
    source: str | None
    session_id: str | None
    role: str | None
    since: float | None
    until: float | None
    include_tools: bool
    limit: int


@dataclass(frozen=True, slots=True)
class Prune:
    inactive_before: float | None  # sessions inactive since before this time
    never_active_at: float | None  # the time the never-active rule measures age from
    include_pinned: bool
    include_archived: bool
    force: bool
    dry_run: bool


# --- turns ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BeginTurn:
    id: str
    session_id: str
    user_uid: str | None
    cwd: str | None
    started_at: float


@dataclass(frozen=True, slots=True)
class EndTurn:
    id: str
    outcome: str  # from the reason, by the guidance table
    reason: str
    detail: str | None
    receipts: str  # canonical JSON list of failed edits
    continued_by: str | None
    ended_at: float
