"""sessiondb as an OpenAI Agents SDK session: `Runner.run(agent, text, session=SessiondbSession(...))`.

    from sessiondb.adapters.openai_agents import SessiondbSession
    session = SessiondbSession("support-42", "agents.db")     # or store=, or a postgresql:// URL

The SDK's session id names a sessiondb session (source "openai-agents"), created on the
first write; an id sessiondb cannot take as it is (a '/', a control character...) is
mapped to `oa-` and a digest of it, and kept in the session's metadata. Items are stored
one message each (agents_items.py: readable, searchable, lossless). What sessiondb adds:
idempotent appends across processes, undo that keeps history (pop_item, clear_session),
compaction under a lease that loses no concurrent write (run_compaction), search,
usage and branches. docs/adapters/openai-agents.md says what is guaranteed.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import os
from functools import partial
from typing import Any, Awaitable, Callable

from agents.items import TResponseInputItem
from agents.memory import OpenAIResponsesCompactionArgs, SessionABC, SessionSettings
from agents.memory.openai_responses_compaction_session import (
    DEFAULT_COMPACTION_THRESHOLD, select_compaction_candidate_items,
)
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
from agents.models import get_default_model
from agents.result import RunResult

from ..errors import CompactionBusy, InvalidInput, NotFound, StoreClosed
from ..inputs import check_session_id
from ..model import SearchHit, Usage
from ..store.aio import AsyncStore
from ..store.contract import Store
from .agents_conversation import SOURCE, StoredConversation
from .agents_items import from_message, normalise
from .binding import StoreBinding

Items = list[TResponseInputItem]
#: Replaces the covered history with its summary items (a model call, usually).
Summariser = Callable[[Items], Items | Awaitable[Items]]


def store_session_id(session_id: Any) -> str:
    """The sessiondb id of an SDK session id: itself when sessiondb takes it, else `oa-<digest>`."""
    if not isinstance(session_id, str):
        raise InvalidInput(f"session_id must be text, not {type(session_id).__name__}")
    try:
        return check_session_id(session_id)
    except InvalidInput:
        return "oa-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def default_should_compact(items: Items) -> bool:
    """The SDK's own rule: compact once 10 items that are not user messages have gathered."""
    return len(select_compaction_candidate_items(items)) >= DEFAULT_COMPACTION_THRESHOLD


class SessiondbSession(SessionABC):
    """One agent conversation kept in a sessiondb store."""

    def __init__(
        self,
        session_id: str,
        location: str | os.PathLike[str] | None = None,
        *,
        store: Store | AsyncStore | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        summarise: Summariser | None = None,
        should_compact: Callable[[Items], bool] = default_should_compact,
        compaction_mode: str = "in_place",
        compaction_ttl: float = 300,
        **open_options: Any,
    ) -> None:
        if compaction_mode not in ("in_place", "rotate"):
            raise InvalidInput(f"compaction_mode must be 'in_place' or 'rotate', not {compaction_mode!r}")
        self.session_id = session_id
        self.store_session_id = store_session_id(session_id)
        self.session_settings = coerce_session_settings(session_settings or SessionSettings())
        self._summarise = summarise
        self._should_compact = should_compact
        self._compaction_mode, self._compaction_ttl = compaction_mode, compaction_ttl
        self._binding = StoreBinding(store, location, **open_options)
        self._store = self._binding.sync
        self._conversation = StoredConversation(self._store, self.store_session_id, session_id)
        self._closed = False

    @property
    def store(self) -> Store:
        """The sessiondb store this session writes to."""
        return self._store

    # --- the SDK's Session protocol -----------------------------------------------------

    async def get_items(self, limit: int | None = None) -> Items:
        """The live conversation (across compactions and rotations), the newest `limit` items."""
        self._check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        _tip, rows = await self._off_loop(self._conversation.live, None if limit is None or limit < 0 else limit)
        return [from_message(m) for m in rows]

    async def add_items(self, items: Items) -> None:
        """Store the items as one atomic append; what is already stored is not stored again."""
        self._check_open()
        batch = [normalise(item, f"item {i}") for i, item in enumerate(items)]
        if batch:
            await self._off_loop(self._conversation.add, batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Undo the newest item and return it (rewound: kept and restorable, never searched)."""
        self._check_open()
        return await self._off_loop(self._conversation.pop)

    async def clear_session(self) -> None:
        """Undo every live item: rewound, kept, restorable with `store.restore_rewound`."""
        self._check_open()
        await self._off_loop(self._conversation.clear)

    # --- compaction ---------------------------------------------------------------------

    async def run_compaction(self, args: OpenAIResponsesCompactionArgs | None = None) -> None:
        """Replace the history with the summariser's items under a compaction lease.

        The runner calls this after every turn; it compacts when `should_compact` says so
        (or `force` is given) and a summariser was given. Items added while the summariser
        runs are above the lease's watermark: they follow the summary. A compaction already
        running elsewhere makes an automatic call a no-op (CompactionBusy when forced).
        """
        self._check_open()
        force = bool(args and args.get("force"))
        if self._summarise is None:
            if force:
                raise InvalidInput("run_compaction needs a summariser: SessiondbSession(..., summarise=...)")
            return
        if not force and not self._should_compact(await self.get_items(-1)):
            return
        try:
            lease = await self._binding.call("begin_compaction", self.store_session_id, holder=SOURCE,
                                             ttl=self._compaction_ttl)
        except (CompactionBusy, NotFound):
            if force:
                raise
            return
        try:
            covered = await self._binding.call("transcript", lease.session_id, before=lease.watermark + 1)
            if not covered:
                await self._binding.call("abort_compaction", lease)
                return
            summary = self._summarise([from_message(m) for m in covered])
            summary = await summary if inspect.isawaitable(summary) else summary
            epoch = await self._off_loop(self._conversation.epoch)
            messages = self._conversation.messages(list(summary or ()), f"summary-{lease.token}", epoch)
            if not messages:
                raise InvalidInput("the summariser returned no items: a compaction needs a summary")
            await self._binding.call("commit_compaction", lease, messages, mode=self._compaction_mode)
        except BaseException:
            await asyncio.shield(self._binding.call("abort_compaction", lease))
            raise

    # --- what sessiondb adds ------------------------------------------------------------

    async def search(self, query: str, *, limit: int = 20, include_tools: bool = False) -> list[SearchHit]:
        """This conversation's messages matching `query` (sessiondb's query language), best
        first, compacted history included, rewound never."""
        self._check_open()
        return await self._off_loop(self._conversation.search, query, limit, include_tools)

    async def store_run_usage(self, result: RunResult, *, model: str | None = None, provider: str = "openai") -> None:
        """Add a finished run's model calls to the session's usage, one call per model response.

        Not idempotent: recording one run twice counts it twice.
        """
        self._check_open()
        name = model or _model_name(result.last_agent.model)
        await self._off_loop(self._conversation.record_usage, [r.usage for r in result.raw_responses], name, provider)

    async def usage(self) -> Usage:
        """The session's accumulated usage: totals and one row per (model, provider, task)."""
        self._check_open()
        try:
            return await self._binding.call("usage", self.store_session_id)
        except NotFound:
            return Usage(session_id=self.store_session_id)

    async def create_branch_from_turn(self, turn_number: int, *, title: str | None = None) -> SessiondbSession:
        """A new session holding this conversation before its `turn_number`-th user message
        (1 is the first), to ask that turn again differently; this session is unchanged.
        The branch shares this session's store (still this session's to close)."""
        self._check_open()
        branch = await self._off_loop(self._conversation.branch, turn_number, title)
        return SessiondbSession(branch.id, store=self._store, session_settings=self.session_settings,
                                summarise=self._summarise, should_compact=self._should_compact,
                                compaction_mode=self._compaction_mode, compaction_ttl=self._compaction_ttl)

    def close(self) -> None:
        """Close the store if this session opened it; a handed-in store stays open."""
        self._closed = True
        self._binding.close()

    async def __aenter__(self) -> SessiondbSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # --- the blocking work runs on a worker thread -----------------------------------------

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(partial(fn, *args))

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"the session {self.session_id!r} is closed")


def _model_name(model: Any) -> str:
    """The name of an agent's model: as given, a model object's own name, or the SDK's default."""
    if model is None:
        return get_default_model()
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__
