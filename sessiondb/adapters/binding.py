"""The store an adapter writes to, handed in or opened and owned by the adapter.

Every adapter is built the same way: what its SDK needs (a session id, for the
session-shaped ones) plus either `store=`, an open Store or AsyncStore that stays the
caller's to close, or the arguments of `open_store` (a path or URL, `home=`,
`profile=`, ...), which the adapter opens, owns and closes. Works on every backend.

The adapters whose SDK has no user of its own (the OpenAI Agents session, LangChain's
history, LangGraph's saver) take `user_id=` too: the person whose conversations they
keep. Their sessions are stamped with it, and the SDK's id names a session of that user
alone (`user_session_id`), so one user's ids are never another's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from functools import partial
from typing import Any

from .. import open_store
from ..errors import InvalidInput, NotFound, SessionExists
from ..inputs import check_label
from ..store.aio import AsyncStore
from ..store.contract import Store


def user_scope(user_id: Any) -> str | None:
    """An adapter's `user_id=`: None (every conversation, as without one) or a person's id."""
    return None if user_id is None else check_label(user_id, "user_id", required=True)


def user_session_id(prefix: str, user_id: str, sdk_id: str) -> str:
    """The session that keeps the SDK's session or thread `sdk_id` of user `user_id`:
    `<prefix>-user-` and a digest of both, so the same SDK id under two users names two
    sessions (and any SDK id, however long, a valid session id)."""
    if not isinstance(sdk_id, str):
        raise InvalidInput(f"a session id must be text, not {type(sdk_id).__name__}")
    digest = hashlib.sha256(json.dumps([user_id, sdk_id]).encode()).hexdigest()[:32]
    return f"{prefix}-user-{digest}"


class StoreBinding:
    """One adapter's store: `sync` for blocking calls, `call()` to await them off the loop."""

    def __init__(
        self,
        store: Store | AsyncStore | None = None,
        location: str | os.PathLike[str] | None = None,
        **open_options: Any,
    ) -> None:
        if store is not None and (location is not None or open_options):
            raise InvalidInput("give either store= (an open store) or where to open one, not both")
        if isinstance(store, AsyncStore):
            store = store.sync
        if store is not None and not isinstance(store, Store):
            raise InvalidInput(f"store= must be a sessiondb Store or AsyncStore, not {type(store).__name__}")
        self.owned = store is None
        self.sync: Store = open_store(location, **open_options) if store is None else store

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Await the store's method `name` on a worker thread, so the event loop never blocks."""
        return await asyncio.to_thread(partial(getattr(self.sync, name), *args, **kwargs))

    def close(self) -> None:
        """Close the store if this binding opened it; a handed-in store stays open."""
        if self.owned:
            self.sync.close()


class BoundToStore:
    """What every adapter built on a StoreBinding offers: its `store`, `close()`, and `with`."""

    _binding: StoreBinding

    @property
    def store(self) -> Store:
        """The store this adapter writes to (handed in, or opened by it)."""
        return self._binding.sync

    def close(self) -> None:
        """Close the store if this adapter opened it; a handed-in store stays open."""
        self._binding.close()

    def __enter__(self) -> Any:
        return self

    def _ensure_session(self, session_id: str, source: str, **fields: Any) -> None:
        """Create the session the adapter writes to unless it exists; of writers racing to
        create it, one does and the others find it."""
        try:
            self.store.get_session(session_id)
        except NotFound:
            try:
                self.store.create_session(source, session_id=session_id, **fields)
            except SessionExists:
                pass

    def __exit__(self, *exc: object) -> None:
        self.close()
