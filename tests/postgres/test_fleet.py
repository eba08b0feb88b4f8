"""Many writer processes, each with its own pool, on the same sessions of one server."""

from __future__ import annotations

import threading
import time

import psycopg

import sessiondb
from sessiondb.store.postgres.connect import client_name
from fleet_writers import acknowledged, check_sessions, start_writer


def test_writer_processes_on_the_same_sessions_lose_nothing_and_keep_each_writers_order(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        sessions = [store.create_session("fleet").id for _ in range(3)]
        writers = [start_writer(pg_url, pg_schema, f"w{k}", 60, sessions) for k in range(4)]
        acked = []
        for process in writers:
            uids, err = acknowledged(process)
            assert process.returncode == 0, err
            acked += uids
        assert len(acked) == 4 * 60
        check_sessions(store, sessions, acked)
        assert sum(store.get_session(s).message_count for s in sessions) == 240


def test_a_server_restart_during_appends_is_retried_without_loss_or_duplicates(pg_server, pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        sessions = [store.create_session("fleet").id for _ in range(2)]
    writers = [start_writer(pg_url, pg_schema, f"w{k}", 150, sessions) for k in range(3)]
    time.sleep(1.0)  # let the writers get going (not a timing assertion: any moment will do)
    pg_server.restart()
    acked = []
    for process in writers:
        uids, err = acknowledged(process)
        assert process.returncode == 0, err  # every append was retried until it landed
        acked += uids
    assert len(acked) == 3 * 150
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        check_sessions(store, sessions, acked)


def test_a_connection_killed_while_idle_is_replaced_and_the_append_lands_once(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        s = store.create_session("cli")
        store.append(s.id, {"uid": "before", "role": "user", "content": "hello"})
        with psycopg.connect(pg_url, autocommit=True) as admin:  # what an idle timeout or pgbouncer does
            killed = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                   "WHERE application_name = %s", (client_name(pg_schema),)).fetchone()[0]
        assert killed >= 1
        store.append(s.id, {"uid": "after", "role": "user", "content": "still here"})
        assert [m.uid for m in store.transcript(s.id)] == ["before", "after"]


def test_an_exhausted_pool_is_store_busy_and_writes_nothing(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema, pool_size=1, patience=0.3) as store:
        s = store.create_session("cli")
        with store.backend.pool.connection():  # the only connection, held
            try:
                store.append(s.id, {"uid": "late", "role": "user", "content": "x"})
            except sessiondb.StoreBusy as exc:
                assert exc.cause.value == "locked" and "pool" in str(exc)
            else:
                raise AssertionError("an append with no connection to use was acknowledged")
        assert store.transcript(s.id) == []


def committed_transactions(admin) -> int:
    """The database's committed transactions once every other backend has exited (a
    backend reports its counts when it exits; while idle it may hold them back)."""
    deadline = time.monotonic() + 30
    while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                        "AND pid <> pg_backend_pid()").fetchone()[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    admin.execute("SELECT pg_stat_clear_snapshot()")
    return admin.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").fetchone()[0]


def test_concurrent_appends_in_one_process_share_transactions(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        sid = store.create_session("cli").id
    with psycopg.connect(pg_url, autocommit=True) as admin:
        before = committed_transactions(admin)
        with sessiondb.open_store(pg_url, schema=pg_schema, pool_size=4) as store:
            threads = [threading.Thread(target=lambda k=k: [store.append(sid, {
                "uid": f"t{k}-{i:03d}", "role": "user", "content": "x"}) for i in range(25)]) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rows = store.transcript(sid)
        used = committed_transactions(admin) - before  # the appends' commits, and a few of the handle's own
    assert len(rows) == 200 and len({m.uid for m in rows}) == 200
    assert used < 200, f"{used} transactions for 200 concurrent appends: none were batched"
