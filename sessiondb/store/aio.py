"""AsyncStore: the Store contract as coroutines, over any backend's synchronous store.

There is no second write path: each coroutine runs the synchronous method on a thread of
the store's own pool, so writes still go through the file's one writer and group commit.
Cancelling a coroutine stops the wait, not the write: a write already handed to the
writer completes and stays durable.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from .contract import Store

# Concurrent calls in flight per store: enough for group commit to batch many appends.
MAX_CONCURRENCY = 32

METHODS = (
    "create_session", "get_session", "list_sessions", "end_session", "reopen_session",
    "set_title", "set_flags", "update_metadata", "delete_session", "append", "transcript",
    "record_usage", "usage",
)


class AsyncStore:
    """The async twin of a Store: the same methods, awaited. `async with` closes it."""

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(MAX_CONCURRENCY, thread_name_prefix="sessiondb-async")

    @property
    def profile(self) -> str | None:
        return self.sync.profile

    @property
    def location(self) -> str:
        return self.sync.location

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(getattr(self.sync, name), *args, **kwargs))

    async def close(self) -> None:
        """Wait for calls in flight, then release the handle (idempotent)."""
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown)
        self.sync.close()

    async def __aenter__(self) -> "AsyncStore":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _delegate(name: str):
    async def method(self: AsyncStore, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(Store, name).__doc__
    return method


for _name in METHODS:
    setattr(AsyncStore, _name, _delegate(_name))
