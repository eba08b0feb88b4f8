"""A store that follows the primary (a multi-host URL, or `target_session_attrs=read-write`)
on one ordinary server: what a failover looks like to a unit of work, made on demand.

A primary fenced read-only (`default_transaction_read_only`, applied by a reload to the
pool's live connections too) is what a connection meets when the server it holds stopped
being the primary: its write is refused (SQLSTATE 25006), and a fresh connection asking for
the writable server is refused until there is one again. The fence is lifted after a count
of refused connection attempts, not after a time. The formation itself (a real failover by
SIGKILL) is the long tier, tests/failover.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

import sessiondb
from sessiondb.errors import Cause, ReadOnlyStandby, Unavailable
from sessiondb.store.postgres.connect import split_url

#: Refused connection attempts (the server read-only) before the fence is lifted.
REFUSED = 3


def message(uid):
    return {"uid": uid, "role": "user", "content": f"message {uid}"}


@pytest.fixture
def fence(pg_url):
    """fence(True) makes the server read-only for every session, fence(False) writable again."""
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute("SET default_transaction_read_only = off")  # its own session stays writable

        def fence(on: bool) -> None:
            admin.execute("ALTER SYSTEM SET default_transaction_read_only = on" if on
                          else "ALTER SYSTEM RESET default_transaction_read_only")
            admin.execute("SELECT pg_reload_conf()")
            # The reload is signalled, not awaited: once a new backend starts with the new
            # value, the postmaster has reloaded and signalled every backend, the pool's too.
            wanted = "on" if on else "off"
            for _ in range(1000):
                with psycopg.connect(pg_url, autocommit=True) as probe:
                    if probe.execute("SHOW default_transaction_read_only").fetchone()[0] == wanted:
                        return
            raise AssertionError(f"the server never took default_transaction_read_only = {wanted}")

        try:
            yield fence
        finally:
            fence(False)


def refused_connections(store) -> int:
    return store.backend.pool.get_stats().get("connections_errors", 0)


def test_a_url_naming_several_servers_asks_for_the_writable_one():
    conninfo, shown, _ = split_url("postgresql://u:secret@h1:5432,h2:5433/db?schema=s")
    assert "target_session_attrs=read-write" in conninfo and "secret" not in shown
    assert "h1:5432,h2:5433" in shown
    chosen, _, _ = split_url("postgresql://u@h1,h2/db?target_session_attrs=any")
    assert chosen.count("target_session_attrs") == 1 and "target_session_attrs=any" in chosen
    single, _, _ = split_url("postgresql://u@h1/db")
    assert "target_session_attrs" not in single  # one server: taken as it is


def test_a_write_refused_by_a_read_only_server_is_retried_until_a_primary_takes_it_once(pg_url, pg_schema, fence):
    url = pg_url + "&target_session_attrs=read-write"
    with sessiondb.open_store(url, schema=pg_schema, pool_size=2, patience=60) as store:
        sid = store.create_session("cli").id
        store.append(sid, message("before"))  # the pool holds a live connection, which the fence reaches
        refused_before = refused_connections(store)
        done = threading.Event()

        def lift() -> None:
            while refused_connections(store) < refused_before + REFUSED and not done.is_set():
                time.sleep(0.02)  # polling a count, not waiting out a time
            fence(False)

        fence(True)
        lifting = threading.Thread(target=lift)
        lifting.start()
        try:
            store.append(sid, message("during"))
        finally:
            done.set()
            lifting.join()
        assert refused_connections(store) >= refused_before + REFUSED  # it asked again and was refused
        assert [m.uid for m in store.transcript(sid)] == ["before", "during"]


def test_with_no_writable_server_past_the_patience_a_write_is_unavailable_and_stores_nothing(
        pg_url, pg_schema, fence):
    url = pg_url + "&target_session_attrs=read-write"
    with sessiondb.open_store(url, schema=pg_schema, pool_size=2, patience=1.0) as store:
        sid = store.create_session("cli").id
        store.append(sid, message("before"))
        fence(True)
        with pytest.raises(Unavailable) as caught:
            store.append(sid, message("during"))
        fence(False)
        error = caught.value
        assert error.cause is Cause.UNAVAILABLE and pg_schema in str(error)
        assert "may or may not be stored; retrying stores it once" in str(error)
    # Checked through a handle opened once the primary is back, with patience to spare: the
    # first handle's pool spaces out its reconnections after the refusals (psycopg_pool's
    # backoff), so within its one second it may not be connected again on a loaded machine.
    with sessiondb.open_store(url, schema=pg_schema, patience=60) as later:
        assert [m.uid for m in later.transcript(sid)] == ["before"]  # the read-only server took nothing
        later.append(sid, message("during"))  # the retry the refusal advises
        assert [m.uid for m in later.transcript(sid)] == ["before", "during"]


def test_a_store_on_one_server_named_as_it_is_says_a_read_only_server_is_a_standby_at_once(
        pg_url, pg_schema, fence):
    with sessiondb.open_store(pg_url, schema=pg_schema, pool_size=2, patience=60) as store:
        sid = store.create_session("cli").id
        fence(True)
        with pytest.raises(ReadOnlyStandby):  # not retried for a minute: nothing asked for a primary
            store.append(sid, message("refused"))
        fence(False)
        assert store.transcript(sid) == []
