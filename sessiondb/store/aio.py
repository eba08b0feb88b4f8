"""AsyncStore: the Store contract as coroutines, over any backend's synchronous store.

There is no second write path: each coroutine runs the synchronous method on a thread of
the store's own pool, so writes still go through the file's one writer and group commit.
Cancelling a coroutine stops the wait, not the write: a write already handed to the
writer completes and stays durable.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import islice
from typing import Any

from ..errors import StoreClosed
from .contract import Store
from .optional import Maintainable

# Concurrent calls in flight per store: enough for group commit to batch many appends.
MAX_CONCURRENCY = 32

METHODS = (
    "create_session", "get_session", "get_sessions", "get_messages", "list_sessions", "end_session", "reopen_session",
    "set_title", "set_flags", "update_metadata", "delete_session", "append", "extend", "flush", "transcript",
    "record_usage", "usage",
    "begin_compaction", "refresh_compaction", "abort_compaction", "commit_compaction",
    "compaction_lease", "lineage", "tip", "resume", "rewind", "restore_rewound", "branch",
    "search", "recall", "rebuild_vectors", "forget", "find_session", "stats", "export_session", "import_records",
    "replay_spool", "verify",
    "begin_turn", "end_turn", "get_turn", "turns",
    "policy", "set_policy", "clear_policy", "hold", "release_hold", "apply_policy", "prune",
    # Maintainable, where the store has it
    "backup", "optimize", "vacuum",
)


class AsyncStore:
    """The async twin of a Store: the same methods, awaited. `async with` closes it."""

    def __init__(self, store: Store) -> None:
        self.sync = store
        self._executor = ThreadPoolExecutor(MAX_CONCURRENCY, thread_name_prefix="sessiondb-async")
        self._closed = False

    @property
    def profile(self) -> str | None:
        return self.sync.profile

    @property
    def location(self) -> str:
        return self.sync.location

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise StoreClosed("this store handle is closed; open the store again")
        loop = _running_loop()
        return await loop.run_in_executor(self._executor, partial(getattr(self.sync, name), *args, **kwargs))

    async def export(self, session_ids: Any = None) -> "AsyncRecords":
        """Store.export as an async iterator: `async for record in await astore.export()`.

        Records are pulled from the store's thread pool a batch at a time; memory stays
        bounded. Iterate to the end or `await records.aclose()`.
        """
        return AsyncRecords(await self._call("export", session_ids), self._executor)

    async def close(self) -> None:
        """Wait for calls in flight, then release the handle (idempotent)."""
        self._closed = True
        await _running_loop().run_in_executor(None, self._executor.shutdown)
        self.sync.close()

    async def __aenter__(self) -> "AsyncStore":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncRecords:
    """An async iterator over a synchronous record iterator, read on the store's pool."""

    BATCH = 256

    def __init__(self, records: Any, executor: ThreadPoolExecutor) -> None:
        self._records = records
        self._executor = executor
        self._buffer: list[Any] = []
        self._done = False

    def __aiter__(self) -> "AsyncRecords":
        return self

    async def __anext__(self) -> Any:
        if not self._buffer and not self._done:
            loop = _running_loop()
            self._buffer = await loop.run_in_executor(self._executor, self._take)
            self._buffer.reverse()
            self._done = not self._buffer
        if not self._buffer:
            raise StopAsyncIteration
        return self._buffer.pop()

    def _take(self) -> list[Any]:
        return list(islice(self._records, self.BATCH))

    async def aclose(self) -> None:
        await _running_loop().run_in_executor(self._executor, self._records.close)


def _delegate(name: str):
    async def method(self: AsyncStore, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = getattr(Store if hasattr(Store, name) else Maintainable, name).__doc__
    return method


for _name in METHODS:
    setattr(AsyncStore, _name, _delegate(_name))


def _running_loop() -> Any:
    """The loop running the coroutine that asks. asyncio is imported here, where that loop
    has loaded it already: a process using only synchronous stores, which imports this
    module with the package, never carries it (about 9 MB resident)."""
    import asyncio
    return asyncio.get_running_loop()
