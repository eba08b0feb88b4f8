"""sessiondb as the memory service of Google ADK: recall over stored conversations."""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from typing_extensions import override

from ..errors import InvalidInput, SessionExists
from ..store.aio import AsyncStore
from ..store.contract import Store
from . import adk_state as state
from .adk_events import event_of, message_of
from .adk_store import SOURCE, OnStore, belongs


class SessiondbMemoryService(OnStore, BaseMemoryService):
    """ADK memory over sessiondb's recall of the app's and user's sessions.

    The events of a session written through SessiondbSessionService are already stored,
    so `add_session_to_memory` only checks that; a session kept elsewhere is copied in
    (idempotently, by event id). `search_memory` runs sessiondb's recall (store.recall:
    the query is the model's own phrasing, so any of its content words may match,
    stemmed, rare words counting most) over the user's conversations in the app and
    returns up to `limit` events, best first.
    """

    def __init__(self, location: str | os.PathLike[str] | None = None, *, store: Store | AsyncStore | None = None,
                 limit: int = 20, **open_options: Any) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be an integer between 1 and 1000, not {limit!r}")
        super().__init__(location, store, open_options)
        self._limit = limit

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await self._off_loop(self._remember, session)

    def _remember(self, session: Session) -> None:
        events = [e for e in session.events if not e.partial]
        if self._conversation(session.app_name, session.user_id, session.id) is None:
            try:
                self._store.create_session(SOURCE, session_id=session.id, user_id=session.user_id,
                                           metadata={state.APP_KEY: session.app_name})
            except SessionExists:
                raise AlreadyExistsError(f"Session id {session.id} is taken by another app or user.") from None
        elif not events or [m.uid for m in self._newest(session.id)] == [events[-1].id]:
            return  # stored as it was appended: nothing to do
        if events:
            self._store.append(session.id, [message_of(e) for e in events])  # only the missing ones are written

    @override
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        return await self._off_loop(self._search, app_name, user_id, query)

    def _search(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        owners: dict[str, bool] = {}
        memories = []
        # Searched across the store's ADK sessions, then narrowed to this user's: the
        # widest page, so other users' matches do not crowd theirs out.
        for hit in self._store.recall(query, source=SOURCE, limit=1000):
            if hit.session_id not in owners:
                root = self._store.lineage(hit.session_id)[0]  # a rotated continuation belongs to its root
                owners[hit.session_id] = belongs(root, app_name, user_id)
            if not owners[hit.session_id]:
                continue
            found = self._store.transcript(hit.session_id, after=hit.message_id - 1, limit=1, include_compacted=True)
            if not found or found[0].id != hit.message_id:
                continue  # moved by a compaction since the search: found again next time
            event = event_of(found[0])
            memories.append(MemoryEntry(id=event.id, content=event.content, author=event.author,
                                        timestamp=datetime.fromtimestamp(event.timestamp, timezone.utc).isoformat()))
            if len(memories) == self._limit:
                break
        return SearchMemoryResponse(memories=memories)
