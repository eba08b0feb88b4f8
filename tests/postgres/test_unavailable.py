"""The server away under a write: retried within the patience, and said as it is when it stays away.

A write stopped by the server's absence may have committed just before its connection
broke, so it is `Unavailable` ("may or may not be stored; retrying stores it once"), never
StoreBusy ("nothing was written"), which only a pool whose every connection is busy is.
The server is brought back after a count of failed connection attempts, not after a time.
"""

from __future__ import annotations

import threading
import time

import pytest

import sessiondb
from sessiondb.errors import Cause, ServerUnreachable, StoreBusy, Unavailable

PATIENCE = 60.0
# Failed connection attempts before the server comes back. A pool retrying on its own, its
# pause doubling from 1 s, fails its sixteenth attempt (two at a time) only after 127 s,
# past the patience; sessiondb's retrying fails sixteen in a few seconds. The patience
# leaves a server restarting on a loaded machine most of a minute to come back.
AWAY = 16


def message(uid):
    return {"uid": uid, "role": "user", "content": f"message {uid}"}


def connect_errors(store) -> int:
    return store.backend.pool.get_stats().get("connections_errors", 0)


def test_a_write_the_server_stays_away_from_is_unavailable_not_busy(pg_server, pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema, patience=1.0, pool_size=2) as store:
        sid = store.create_session("cli").id
        store.append(sid, message("before"))  # the pool holds a live connection, which the kill breaks
        pg_server.kill()
        try:
            with pytest.raises(Unavailable) as write:
                store.append(sid, message("during"))
            with pytest.raises(ServerUnreachable) as read:
                store.get_session(sid)
        finally:
            pg_server.start()
        assert connect_errors(store) >= 1  # it waited on a pool that could not connect
        error = write.value
        assert error.cause is Cause.UNAVAILABLE and not isinstance(error, StoreBusy)
        assert pg_schema in str(error) and "may or may not be stored; retrying stores it once" in str(error)
        assert not isinstance(read.value, Unavailable)  # a read stores nothing: it is only unreachable
    # Through a handle opened once the server is back, with patience to spare: the first
    # handle's pool spaces out its reconnections after the failed ones (psycopg_pool's
    # backoff), so within its one second it may not be connected again on a loaded machine.
    with sessiondb.open_store(pg_url, schema=pg_schema, patience=60) as later:
        later.append(sid, message("during"))  # the retry the refusal advises
        assert [m.uid for m in later.transcript(sid)] == ["before", "during"]


def test_a_lone_writer_finds_the_server_back_within_its_patience(pg_server, pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema, pool_size=2, patience=PATIENCE) as store:
        sid = store.create_session("cli").id
        store.append(sid, message("before"))
        failed_before = connect_errors(store)
        done = threading.Event()

        def bring_back() -> None:
            while connect_errors(store) < failed_before + AWAY and not done.is_set():
                time.sleep(0.05)  # polling a count, not waiting out a time
            pg_server.start()

        pg_server.kill()
        returns = threading.Thread(target=bring_back)
        returns.start()
        try:
            store.append(sid, message("during"))
        finally:
            done.set()
            returns.join()
        assert connect_errors(store) >= failed_before + AWAY  # the server was away that long
        assert [m.uid for m in store.transcript(sid)] == ["before", "during"]
