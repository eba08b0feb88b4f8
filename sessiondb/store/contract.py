"""The Store contract: what every backend promises.

The contract tests in tests/contract/ run these promises against every backend through
one parametrised fixture. Times are seconds since the epoch (floats); an aware datetime
is accepted wherever a time is taken.

Errors: every method raises only sessiondb errors (sessiondb.errors). Bad input raises
InvalidInput and writes nothing; an unknown session raises NotFound.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

from ..model import Message, Page, Session, Usage

MessageInput = Message | Mapping[str, Any]


@runtime_checkable
class Store(Protocol):
    """A handle on one profile's store. A context manager; `close()` is idempotent."""

    @property
    def profile(self) -> str | None:
        """The profile this store belongs to (None for the default profile)."""

    @property
    def location(self) -> str:
        """Where the store lives (a file path, or a server address without secrets)."""

    def close(self) -> None:
        """Release this handle. Other handles on the same store keep working."""

    def __enter__(self) -> "Store": ...

    def __exit__(self, *exc: object) -> None: ...

    # --- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        source: str,
        *,
        session_id: str | None = None,
        title: str | None = None,
        profile: str | None = None,
        session_key: str | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        """Create a session. `source` names the surface writing it (cli, gateway, desktop...).

        A title is sanitised (control characters removed, whitespace collapsed), at most
        100 characters, and unique among sessions (TitleConflict otherwise). `profile`
        defaults to the store's own profile.
        """

    def get_session(self, session_id: str) -> Session:
        """The session, or NotFound."""

    def list_sessions(
        self,
        *,
        source: str | None = None,
        include_archived: bool = False,
        include_hidden: bool = False,
        pinned: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        """Sessions, most recently active first; pass the page's cursor back for the next."""

    def end_session(self, session_id: str, reason: str) -> Session:
        """Mark the session ended with a reason (the first end time is kept)."""

    def reopen_session(self, session_id: str) -> Session:
        """Clear the session's end."""

    def set_title(self, session_id: str, title: str | None) -> Session:
        """Set or clear (None or blank) the title; same rules as create_session."""

    def set_flags(
        self,
        session_id: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
        hidden: bool | None = None,
    ) -> Session:
        """Set the flags given (None leaves a flag as it is). Not user activity."""

    def update_metadata(self, session_id: str, patch: Mapping[str, Any]) -> Session:
        """Merge `patch` into the metadata (None removes a key). Not user activity."""

    def delete_session(self, session_id: str) -> None:
        """Delete the session with its messages and usage."""

    # --- messages ----------------------------------------------------------------------

    def append(self, session_id: str, messages: MessageInput | Iterable[MessageInput]) -> list[Message]:
        """Store one message or many as one atomic batch, and return the stored rows.

        Idempotent by uid: a message whose uid is already stored in the session is not
        written again and its stored row is returned; the same uid with a different
        payload (role, content, tool calls, reasoning) raises MessageConflict and the
        whole batch is refused. A message without a uid gets one minted. Returns only
        once the batch is durable at the store's durability. A user or assistant message
        (not an internal notification) moves the session's last_activity_at.
        """

    def transcript(
        self,
        session_id: str,
        *,
        include_compacted: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        order: str = "asc",
    ) -> list[Message]:
        """The session's messages in commit order ('desc': newest first).

        `before`/`after` are message ids (exclusive bounds) for paging. Compacted
        messages only with include_compacted; rewound messages never.
        """

    # --- usage -------------------------------------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        model: str,
        provider: str = "",
        task: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        """Add one model call's usage to the session's per (model, provider, task) totals."""

    def usage(self, session_id: str) -> Usage:
        """The session's accumulated usage: totals and one row per (model, provider, task)."""
