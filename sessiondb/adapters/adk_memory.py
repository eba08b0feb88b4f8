"""sessiondb as the memory service of Google ADK: recall over stored conversations."""

from __future__ import annotations

import os
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event
from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from typing_extensions import override

from .. import recall
from ..errors import InvalidInput, MessageConflict, SessionExists
from ..model import Message, Session as StoredSession
from ..query import fold
from ..store.aio import AsyncStore
from ..store.contract import Store
from .adk_events import event_of, message_of
from .adk_store import SOURCE, OnStore, belongs

#: The ADK session id under which add_events_to_memory keeps events given without one (the
#: SDK's in-memory service's name for that bucket).
UNSESSIONED = "__unknown_session_id__"
#: How many of recall's best matches (the user's own) search_memory reads and ranks, per
#: memory it returns: each costs two reads, and recall's order already puts most of the
#: query's words first.
RANKED_PER_MEMORY = 3


class SessiondbMemoryService(OnStore, BaseMemoryService):
    """ADK memory over sessiondb's recall of the app's and user's sessions.

    The events of a session written through SessiondbSessionService are already stored,
    so `add_session_to_memory` only checks that; a session kept elsewhere is copied in
    (idempotently, by event id). `add_events_to_memory` adds events to the session named
    (created when new; events given without a session go to one of the user's own), each
    event id once: an id already stored keeps what was stored first. `search_memory`
    runs sessiondb's recall (store.recall: the query is the model's own phrasing, so any
    of its content words may match, stemmed, rare words counting most) over the user's
    conversations in the app and returns up to `limit` events (ten, as the SDK's own
    service), ranked as `ranked` says.
    """

    def __init__(self, location: str | os.PathLike[str] | None = None, *, store: Store | AsyncStore | None = None,
                 limit: int = 10, **open_options: Any) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise InvalidInput(f"limit must be an integer between 1 and 1000, not {limit!r}")
        super().__init__(location, store, open_options)
        self._limit = limit

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        await self._off_loop(self._remember, session)

    def _remember(self, session: Session) -> None:
        events = [e for e in session.events if not e.partial]
        stored = self._conversation(session.app_name, session.user_id, session.id)
        if stored is None:
            stored = self._claimed(session.app_name, session.user_id, session.id)
        elif not events or [m.uid for m in self._newest(stored.id)] == [events[-1].id]:
            return  # stored as it was appended: nothing to do
        self._keep(stored.id, [message_of(e) for e in events])

    @override
    async def add_events_to_memory(self, *, app_name: str, user_id: str, events: Sequence[Event],
                                   session_id: str | None = None,
                                   custom_metadata: Mapping[str, object] | None = None) -> None:
        events = [e for e in events if not e.partial]  # serialised on the loop: later changes to them are not kept
        await self._off_loop(self._add_events, app_name, user_id, [message_of(e) for e in events],
                             session_id or UNSESSIONED)

    def _add_events(self, app_name: str, user_id: str, messages: list[dict[str, Any]], session_id: str) -> None:
        stored = self._conversation(app_name, user_id, session_id) or self._claimed(app_name, user_id, session_id)
        self._keep(stored.id, messages)

    def _claimed(self, app_name: str, user_id: str, session_id: str) -> StoredSession:
        """The conversation of an ADK session this service is the first to store."""
        try:
            return self._claim(app_name, user_id, session_id, {})
        except SessionExists:  # created by another writer since it was looked up
            found = self._conversation(app_name, user_id, session_id)
            if found is None:
                raise AlreadyExistsError(f"Session id {session_id} is taken.") from None
            return found

    def _keep(self, stored_id: str, messages: list[dict[str, Any]]) -> None:
        """Store the events' messages not stored yet (an event id stored with other content
        keeps the stored one, as the SDK's in-memory service keeps the first)."""
        if not messages:
            return
        try:
            self._store.append(stored_id, messages)  # one batch: only the missing ones are written
        except MessageConflict:  # the batch is refused whole: store the others one by one
            for message in messages:
                try:
                    self._store.append(stored_id, message)
                except MessageConflict:
                    pass

    @override
    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        return await self._off_loop(self._search, app_name, user_id, query)

    def _search(self, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        # The user's own ADK sessions are searched (another user's never are), then those
        # of this app kept: the widest page, so other apps' matches do not crowd theirs out.
        # A rotated continuation has its conversation's app (a compaction copies the metadata).
        hits = self._store.recall(query, source=SOURCE, user_id=user_id, limit=1000)
        held = self._store.get_sessions(dict.fromkeys(hit.session_id for hit in hits))
        kept = [hit.message_id for hit in hits
                if hit.session_id in held and belongs(held[hit.session_id], app_name, user_id)]
        # Their events, read at once; one a compaction moved since is found next time.
        found = list(self._store.get_messages(kept[:RANKED_PER_MEMORY * self._limit]).values())
        memories = []
        for message in ranked(found, recall.question(query))[:self._limit]:
            event = event_of(message)
            memories.append(MemoryEntry(id=event.id, content=event.content, author=event.author,
                                        timestamp=datetime.fromtimestamp(event.timestamp, timezone.utc).isoformat()))
        return SearchMemoryResponse(memories=memories)


def ranked(found: list[Message], question: recall.Recall) -> list[Message]:
    """Recall's matches in the order ADK's memory contract expects: the events holding
    the most of the question's words first (as the SDK's in-memory service counts them,
    whole words, or a CJK trigram inside the text); among those, the ones whose words are
    rarer among the matches; then in the order they were stored. A match made only by a
    stem (`researched` for `research`) holds none of the words as written and comes last,
    in recall's order."""
    held = [_held(message.text, question) for message in found]
    matches = Counter(needle for needles in held for needle in needles)  # how many matches hold each

    def key(i: int) -> tuple[int, float, int]:
        rarity = sum(1 / matches[needle] for needle in held[i])
        return -len(held[i]), -rarity, found[i].id if held[i] else i

    return [found[i] for i in sorted(range(len(found)), key=key)]


def _held(text: str, question: recall.Recall) -> set[str]:
    """The question's words and trigrams `text` holds, case and accents folded."""
    words = set(recall.words(text))
    folded = fold(text) if question.trigrams else ""
    return {word for word in question.words if word in words} | {t for t in question.trigrams if t in folded}
