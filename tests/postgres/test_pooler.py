"""Through a real pgbouncer in transaction mode (tests/pgpooler.py), whose few server
connections serve the transactions of every client: nothing a store needs may stay on a
server connection between its transactions. The contract suite's every rule runs through
it too (`make test-pooler`)."""

from __future__ import annotations

import psycopg
import pytest

import sessiondb
from sessiondb.errors import Cause, PoolerMode
from sessiondb.store.postgres import messages
from fleet_writers import acknowledged, check_sessions, start_writer
from pgpooler import start_pooler


def user(text: str, uid: str) -> dict:
    return {"role": "user", "content": text, "uid": uid}


def test_a_pooler_in_statement_mode_is_named_at_open_with_the_setting_to_change(pg_pooler, pg_schema):
    statement_mode = start_pooler(pg_pooler.server, mode="statement", port=6433)
    try:
        with pytest.raises(PoolerMode) as refused:
            sessiondb.open_store(statement_mode.url(), schema=pg_schema, patience=2)
    finally:
        statement_mode.stop()
    assert refused.value.cause is Cause.POOLER_MODE
    assert "pool_mode = transaction" in str(refused.value) and "pool_mode = statement" in refused.value.detail
    with psycopg.connect(pg_pooler.server.url(), autocommit=True) as direct:  # nothing was created
        assert direct.execute("SELECT to_regnamespace(%s)", (pg_schema,)).fetchone()[0] is None


def test_two_profiles_through_one_pooler_each_write_and_find_only_their_own(pg_pooler, pg_schema):
    """Interleaved transactions of two stores share the pooler's few server connections: a
    search_path or a prepared statement left on one would send a write to the other
    profile or fail it."""
    names = [f"{pg_schema}_a", f"{pg_schema}_b"]
    stores = [sessiondb.open_store(pg_pooler.url(), schema=name, pool_size=3) for name in names]
    try:
        sessions = [store.create_session("pooled").id for store in stores]
        for n in range(12):  # past psycopg's five runs before it prepares a statement
            for k, (store, sid) in enumerate(zip(stores, sessions)):
                store.append(sid, [user(f"{names[k]} marmalade {n}", f"{k}-{n}")])
                store.append(sid, [user(f"{names[k]} second {n}", f"{k}-{n}-2"), user("third", f"{k}-{n}-3")])
                assert len(store.search("marmalade")) == n + 1
        for k, (store, sid) in enumerate(zip(stores, sessions)):
            assert [s.id for s in store.list_sessions().items] == [sid]
            assert {m.uid.split("-")[0] for m in store.transcript(sid)} == {str(k)}
            assert len(store.transcript(sid)) == 36
    finally:
        for store in stores:
            store.close()
    with psycopg.connect(pg_pooler.server.url(), autocommit=True) as direct:  # what each schema holds
        for k, name in enumerate(names):
            uids = {row[0] for row in direct.execute(f'SELECT uid FROM "{name}".messages')}
            assert len(uids) == 36 and {u.split("-")[0] for u in uids} == {str(k)}


def test_writer_processes_through_the_pooler_lose_nothing_and_keep_each_writers_order(pg_pooler, pg_schema):
    url = pg_pooler.url()
    with sessiondb.open_store(url, schema=pg_schema) as store:
        sessions = [store.create_session("fleet").id for _ in range(3)]
        writers = [start_writer(url, pg_schema, f"w{k}", 40, sessions) for k in range(4)]
        acked = []
        for process in writers:
            uids, err = acknowledged(process)
            assert process.returncode == 0, err
            acked += uids
        assert len(acked) == 4 * 40
        check_sessions(store, sessions, acked)
        assert sum(store.get_session(s).message_count for s in sessions) == 160


def test_a_transaction_through_the_pooler_has_the_store_durability_whatever_its_server_connection(
        pg_pooler, pg_schema):
    with sessiondb.open_store(pg_pooler.url(), schema=pg_schema, durability="normal") as store:
        backend = store.backend
        assert backend._db.pooled
        seen = {backend._read(lambda conn: conn.execute("SHOW synchronous_commit").fetchone()[0]) for _ in range(6)}
    assert seen == {"off"}
    # The lone append's statement sets it for its own transaction only, before its call runs.
    with psycopg.connect(pg_pooler.url(), autocommit=True, prepare_threshold=None) as conn:
        inside = conn.execute(messages._PINNED + "SELECT current_setting('synchronous_commit') FROM pinned",
                              ("off",)).fetchone()[0]
        after = conn.execute("SHOW synchronous_commit").fetchone()[0]
    assert (inside, after) == ("off", "on")


def test_a_direct_connection_is_not_taken_for_a_pooler(pg_server, pg_schema):
    with sessiondb.open_store(pg_server.url(), schema=pg_schema) as store:
        assert not store.backend._db.pooled


def test_the_doctor_examines_and_repairs_a_store_through_the_pooler(pg_pooler, pg_schema):
    url = f"{pg_pooler.url()}&schema={pg_schema}"
    with sessiondb.open_store(url) as store:
        sid = store.create_session("cli").id
        store.append(sid, [user("a ryokan in kyoto", "1"), user("two nights in Gion", "2")])
    with psycopg.connect(pg_pooler.server.url(), autocommit=True) as direct:  # behind sessiondb's back
        direct.execute(f'UPDATE "{pg_schema}".messages SET words = NULL WHERE uid = %s', ("1",))
        direct.execute(f'UPDATE "{pg_schema}".sessions SET message_count = 99')
        direct.execute(f"UPDATE pg_index SET indisvalid = false WHERE indexrelid = '\"{pg_schema}\".messages_words'::regclass")
    doctor = sessiondb.open_doctor(url)
    assert doctor.examine().damage == "counters"
    fixed = doctor.repair()
    assert fixed.healthy, fixed.problems
    assert fixed.repair["actions"] == ["recomputed the search words of 1 message(s)", "rebuilt the index messages_words",
                                       f"recounted session {sid}"]
