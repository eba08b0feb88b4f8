"""What both ADK services share: their store, one worker-thread hop per call, and which
stored sessions are an app's and a user's conversations."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Callable, TypeVar

from ..errors import NotFound
from ..model import Message
from ..model import Session as StoredSession
from ..store.aio import AsyncStore
from ..store.contract import Store
from . import adk_state as state
from .binding import StoreBinding

#: The source of the sessions that hold ADK conversations.
SOURCE = "adk"
T = TypeVar("T")


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

    def _conversation(self, app_name: str, user_id: str, session_id: str) -> StoredSession | None:
        """The stored session behind an ADK session of this app and user, or None."""
        try:
            stored = self._store.get_session(session_id.strip())  # the SDK's services ignore padding
        except NotFound:
            return None
        return stored if belongs(stored, app_name, user_id) else None

    def _newest(self, session_id: str, count: int = 1) -> list[Message]:
        """The conversation's newest messages, newest first, wherever a rotation moved it."""
        return self._store.transcript(self._store.tip(session_id).id, limit=count, order="desc")
