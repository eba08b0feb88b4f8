"""What both ADK services share: their store, one worker-thread hop per call, and which
stored sessions are an app's and a user's conversations.

An ADK session id is unique per app and user, not per store: two users may each have
`s1`. A conversation is stored under its ADK id when that id is free in the store (every
conversation stored before this rule was, so those stores read as they did), and under an
id derived from the app, the user and the ADK id when another session holds it; the
ADK id then rides in its metadata (ADK_ID_KEY). Reads look under both.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from typing import Any, Callable, Mapping, TypeVar

from ..errors import SessionExists
from ..model import Message
from ..model import Session as StoredSession
from ..store.aio import AsyncStore
from ..store.contract import Store
from . import adk_state as state
from .binding import StoreBinding

#: The source of the sessions that hold ADK conversations.
SOURCE = "adk"
#: The metadata key with the ADK session id of a conversation stored under a derived id.
ADK_ID_KEY = "adk_session_id"
T = TypeVar("T")


def derived_id(app_name: str, user_id: str, session_id: str) -> str:
    """The id a conversation is stored under when its ADK id is held by another session
    (a digest: any ADK id, however long, gives a valid sessiondb id)."""
    digest = hashlib.sha256(json.dumps([app_name, user_id, session_id]).encode()).hexdigest()[:32]
    return f"adk-session-{digest}"


def adk_id(stored: StoredSession) -> str:
    """The ADK session id of a stored conversation."""
    return stored.metadata.get(ADK_ID_KEY, stored.id)


def belongs(stored: StoredSession, app_name: str, user_id: str | None) -> bool:
    """Whether a stored session is an ADK conversation of the app (and of the user, when given)."""
    return (stored.source == SOURCE and stored.metadata.get(state.APP_KEY) == app_name
            and (user_id is None or stored.user_id == user_id))


class OnStore:
    """A service on a store: handed in (`store=`, left open) or opened from `open_store`'s
    arguments (owned, closed by `close()` or `async with`)."""

    def __init__(self, location: str | os.PathLike[str] | None, store: Store | AsyncStore | None,
                 open_options: dict[str, Any]) -> None:
        self._binding = StoreBinding(store=store, location=location, **open_options)
        self._store = self._binding.sync

    async def _off_loop(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work`, a few store calls in a row, on a worker thread: the loop never blocks."""
        return await asyncio.to_thread(work, *args)

    async def close(self) -> None:
        """Close the store if this service opened it; a handed-in store stays open."""
        self._binding.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _conversation(self, app_name: str, user_id: str, session_id: str,
                      found: Mapping[str, StoredSession] | None = None) -> StoredSession | None:
        """The stored session behind an ADK session of this app and user, or None: among
        `found` (sessions the caller read by id, the candidates among them), else read here."""
        candidates = self._candidates(app_name, user_id, session_id)
        if found is None:
            found = self._store.get_sessions(candidates)
        held = (found[c] for c in candidates if c in found and self._holds(found[c], app_name, user_id, session_id))
        return next(held, None)

    @staticmethod
    def _candidates(app_name: str, user_id: str, session_id: str) -> tuple[str, str]:
        """The ids an ADK session of this app and user may be stored under, in the order tried."""
        session_id = session_id.strip()  # the SDK's services ignore padding
        return session_id, derived_id(app_name, user_id, session_id)

    @staticmethod
    def _holds(stored: StoredSession, app_name: str, user_id: str, session_id: str) -> bool:
        """Whether `stored` is the conversation of this app and user's ADK session `session_id`."""
        return belongs(stored, app_name, user_id) and adk_id(stored) == session_id.strip()

    def _claim(self, app_name: str, user_id: str, session_id: str | None,
               metadata: dict[str, Any]) -> StoredSession:
        """Create the conversation of a new ADK session (its id minted when None): under its
        own id when free, else under the derived one. SessionExists when this app and user
        already have a session of that id."""
        metadata = {state.APP_KEY: app_name, **metadata}
        if session_id is None:
            return self._store.create_session(SOURCE, user_id=user_id, metadata=metadata)
        session_id = session_id.strip()
        try:
            return self._store.create_session(SOURCE, session_id=session_id, user_id=user_id, metadata=metadata)
        except SessionExists:
            if self._conversation(app_name, user_id, session_id) is not None:
                raise
        return self._store.create_session(SOURCE, session_id=derived_id(app_name, user_id, session_id),
                                          user_id=user_id, metadata={**metadata, ADK_ID_KEY: session_id})

    def _newest(self, session_id: str, count: int = 1) -> list[Message]:
        """The conversation's newest messages, newest first, wherever a rotation moved it."""
        return self._store.transcript(session_id, tip=True, limit=count, order="desc")
