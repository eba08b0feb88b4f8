"""The store an adapter writes to, handed in or opened and owned by the adapter.

Every adapter is built the same way: what its SDK needs (a session id, for the
session-shaped ones) plus either `store=`, an open Store or AsyncStore that stays the
caller's to close, or the arguments of `open_store` (a path or URL, `home=`,
`profile=`, ...), which the adapter opens, owns and closes. Works on every backend.
"""

from __future__ import annotations

import asyncio
import os
from functools import partial
from typing import Any

from .. import open_store
from ..errors import InvalidInput
from ..store.aio import AsyncStore
from ..store.contract import Store


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
