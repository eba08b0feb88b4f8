"""The async twin of the Store: the same methods as coroutines, `async with`, concurrency
that still goes through the one write path, and cancellation that never loses a write."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time

import apsw
import psycopg
import pytest
from psycopg import sql

import sessiondb
from sessiondb import AsyncStore, NotFound, StoreClosed
from sessiondb.testing import SERVERS

STORE_METHODS = sorted(
    name for name, member in vars(sessiondb.Store).items()
    if not name.startswith("_") and callable(member) and name != "close"
)


@pytest.fixture
def open_async(store_location):
    """Open an AsyncStore on this test's store (the same one the sync fixture uses)."""

    def open_(**options):
        location, defaults = store_location
        return sessiondb.open_async_store(location, **defaults, **options)

    return open_


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def test_every_store_method_is_a_coroutine_of_the_same_name(open_async):
    async def main():
        async with open_async() as astore:
            assert isinstance(astore, AsyncStore)
            for name in STORE_METHODS:
                method = getattr(astore, name)
                assert inspect.iscoroutinefunction(method), name
                assert method.__name__ == name
            assert inspect.iscoroutinefunction(astore.close)
            assert astore.profile is None
            assert astore.location

    assert "append" in STORE_METHODS and "transcript" in STORE_METHODS and "usage" in STORE_METHODS
    asyncio.run(main())


def test_async_with_writes_reads_and_closes(open_async, open_backend):
    async def main():
        async with open_async() as astore:
            s = await astore.create_session("cli", title="async")
            rows = await astore.append(s.id, [user("one"), {"role": "assistant", "content": "two"}])
            assert [m.content for m in await astore.transcript(s.id)] == ["one", "two"]
            assert (await astore.get_session(s.id)).message_count == 2
            await astore.record_usage(s.id, model="m", input_tokens=3)
            assert (await astore.usage(s.id)).input_tokens == 3
            page = await astore.list_sessions()
            assert [x.id for x in page.items] == [s.id]
            await astore.set_flags(s.id, pinned=True)
            await astore.update_metadata(s.id, {"k": "v"})
            await astore.set_title(s.id, "renamed")
            await astore.end_session(s.id, "done")
            await astore.reopen_session(s.id)
        return s.id, rows

    sid, rows = asyncio.run(main())
    with open_backend() as check:
        assert check.transcript(sid) == rows
        s = check.get_session(sid)
        assert (s.title, s.pinned, s.metadata, s.ended_at) == ("renamed", True, {"k": "v"}, None)


def test_async_errors_are_the_same_typed_errors(open_async):
    async def main():
        async with open_async() as astore:
            with pytest.raises(NotFound):
                await astore.get_session("ghost")
            s = await astore.create_session("cli")
            with pytest.raises(sessiondb.InvalidInput):
                await astore.append(s.id, {"role": "robot"})
            await astore.append(s.id, user("a", uid="x"))
            with pytest.raises(sessiondb.MessageConflict):
                await astore.append(s.id, user("b", uid="x"))
            with pytest.raises(NotFound):
                await astore.delete_session("ghost")

    asyncio.run(main())


def test_two_hundred_concurrent_appends_are_each_stored_once(open_async, open_backend):
    async def main():
        async with open_async() as astore:
            s = await astore.create_session("cli")
            results = await asyncio.gather(
                *(astore.append(s.id, user(f"m{i}", uid=f"a-{i}")) for i in range(200))
            )
            # A second wave re-sending every message stores nothing.
            again = await asyncio.gather(
                *(astore.append(s.id, user(f"m{i}", uid=f"a-{i}")) for i in range(200))
            )
            assert again == results
            return s.id, results

    sid, results = asyncio.run(main())
    assert [r[0].uid for r in results] == [f"a-{i}" for i in range(200)]
    with open_backend() as check:
        rows = check.transcript(sid)
        assert sorted(m.uid for m in rows) == sorted(f"a-{i}" for i in range(200))
        assert len({m.id for m in rows}) == 200
        assert [m.seq for m in rows] == list(range(1, 201))
        assert check.get_session(sid).message_count == 200


def test_async_appends_from_several_stores_on_one_file_share_the_write_path(open_async, open_backend):
    async def main():
        stores = [open_async() for _ in range(3)]
        s = await stores[0].create_session("cli")
        await asyncio.gather(*(
            stores[i % 3].append(s.id, user(f"m{i}", uid=f"u{i}")) for i in range(90)
        ))
        for st in stores:
            await st.close()
        return s.id

    sid = asyncio.run(main())
    with open_backend() as check:
        assert sorted(m.uid for m in check.transcript(sid)) == sorted(f"u{i}" for i in range(90))


@contextlib.contextmanager
def writes_held(backend, astore, sid, tmp_path):
    """Another connection holds what an append to `sid` must take (SQLite: the file's write
    lock; PostgreSQL: the session's row), so an append waits inside the store. Yields a
    probe: whether an append is waiting there."""
    if backend == "sqlite":
        holder = apsw.Connection(str(tmp_path / "contract.db"))
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield astore.sync.backend._file.writer._connection_lock.locked
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return
    if backend not in SERVERS:
        pytest.skip(f"another connection holding the {backend} store's write lock is engine-specific")
    backend_ = astore.sync.backend
    with psycopg.connect(backend_._db.conninfo, autocommit=True) as holder, holder.transaction():
        holder.execute(sql.SQL("SELECT 1 FROM {}.sessions WHERE id = %s FOR UPDATE").format(
            sql.Identifier(backend_.schema)), (sid,))
        yield lambda: holder.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid <> pg_backend_pid()").fetchone()[0] > 0


def test_a_cancelled_append_still_lands_once_it_was_handed_to_the_writer(backend, open_async, open_backend, tmp_path):
    """Cancelling the coroutine stops the wait, not the write."""

    async def main():
        astore = open_async()
        s = await astore.create_session("cli")
        with writes_held(backend, astore, s.id, tmp_path) as waiting:
            task = asyncio.ensure_future(astore.append(s.id, user("must survive", uid="cancelled")))
            deadline = time.monotonic() + 60  # a bound on a hang, not on a latency
            while not waiting():  # probe: the append is in the store, waiting on the holder
                assert time.monotonic() < deadline, "the append never reached the store"
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await astore.close()  # waits for calls in flight
        return s.id

    sid = asyncio.run(main())
    with open_backend() as check:
        assert [m.uid for m in check.transcript(sid)] == ["cancelled"]


def test_cancelling_a_gather_of_appends_never_stores_a_message_twice_or_garbled(open_async, open_backend):
    async def main():
        astore = open_async()
        s = await astore.create_session("cli")
        batch = asyncio.gather(*(astore.append(s.id, user(f"m{i}", uid=f"c-{i}")) for i in range(100)))
        await asyncio.sleep(0.005)
        batch.cancel()
        try:
            await batch
        except asyncio.CancelledError:
            pass
        await astore.close()
        return s.id

    sid = asyncio.run(main())
    with open_backend() as check:
        rows = check.transcript(sid)
        uids = [m.uid for m in rows]
        assert len(uids) == len(set(uids))
        assert all(m.content == f"m{m.uid[2:]}" for m in rows)
        assert check.get_session(sid).message_count == len(rows)


def test_async_close_is_idempotent(open_async):
    async def main():
        astore = open_async()
        await astore.create_session("cli")
        await astore.close()
        await astore.close()

    asyncio.run(main())


def test_a_closed_async_store_raises_store_closed(open_async):
    async def main():
        async with open_async() as astore:
            s = await astore.create_session("cli")
        with pytest.raises(StoreClosed):
            await astore.get_session(s.id)

    asyncio.run(main())


def test_async_calls_do_not_block_the_event_loop(open_async):
    async def main():
        async with open_async() as astore:
            s = await astore.create_session("cli")
            ticks = 0
            stop = asyncio.Event()

            async def ticker():
                nonlocal ticks
                while not stop.is_set():
                    ticks += 1
                    await asyncio.sleep(0)

            t = asyncio.ensure_future(ticker())
            await asyncio.gather(*(astore.append(s.id, user(str(i))) for i in range(50)))
            stop.set()
            await t
            assert ticks > 1
            assert threading.current_thread() is threading.main_thread()

    asyncio.run(main())
