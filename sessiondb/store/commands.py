"""Typed commands: a store call after the neutral layer validated and normalised it.

`store/checked.py` turns every public call into one of these (or into plain checked
arguments where a call takes only an id); a backend receives nothing else, so it never
re-validates and never sees a caller's raw input. Times in commands are already read from
the handle's clock. (A compaction is not a command: a lease is judged at the instant its
transaction runs, so store/compaction.py's units of work read the handle's clock themselves.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
    hidden: bool


@dataclass(frozen=True, slots=True)
class ListSessions:
    source: str | None
    user_id: str | None
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
#: (SetFlags applies to a whole conversation: store/lineage.py.)
SessionChange = EndSession | ReopenSession | SetTitle | PatchMetadata


# --- messages and lineage ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Append:
    session_id: str
    batch: tuple[NewMessage, ...]
    now: float


# --- usage, search, maintenance -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordUsage:
    session_id: str
    model: str
    provider: str
    task: str
    amounts: dict[str, float]  # input_tokens ... cost_usd, each checked
    calls: int = 1  # the model calls these amounts sum


@dataclass(frozen=True, slots=True)
class Search:
    query: Query | Recall  # a Recall (a question) for Backend.recall
    profile: str | None
    source: str | None
    user_id: str | None
    session_ids: tuple[str, ...] | None  # one session, or every session of its conversation
    role: str | None
    since: float | None
    until: float | None
    include_tools: bool
    include_reasoning: bool  # a search's words match reasoning too; never a recall's
    limit: int


@dataclass(frozen=True, slots=True)
class Prune:
    """Which sessions a prune takes (retention.prune); a session under a legal hold never."""

    inactive_before: float | None  # sessions last active before this time
    never_active_before: float | None  # sessions opened by a key, never used, and started before this time
    include_pinned: bool  # (inactive ones; a never-active session is never pinned)
    include_archived: bool
    dry_run: bool


@dataclass(frozen=True, slots=True)
class Forget:
    """Whose conversations to erase (forgetting.py): every selector given must match."""

    user_id: str | None
    session_id: str | None
    source: str | None
    before: float | None  # conversations whose every session was last active before this time
    dry_run: bool

    def asked(self) -> dict[str, Any]:
        given = {"user_id": self.user_id, "session_id": self.session_id, "source": self.source, "before": self.before}
        return {name: value for name, value in given.items() if value is not None}


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
