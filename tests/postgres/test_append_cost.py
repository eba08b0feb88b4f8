"""What an append reads on the server does not grow with its session (migration 0007)."""

from __future__ import annotations

import time

import psycopg

import sessiondb
from sessiondb.inputs import prepare_messages
from sessiondb.store.postgres import messages

# Rows its index scans fetched in this transaction, over every index of `messages`.
READS = ("SELECT sum(pg_stat_get_xact_tuples_fetched(indexrelid)) FROM pg_index "
         "WHERE indrelid = 'messages'::regclass")


def test_an_append_reads_the_same_few_rows_in_a_session_of_five_thousand(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        session_id = store.create_session("cli").id
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')

        def append(text: str) -> None:
            assert messages.append_fresh(conn, session_id, prepare_messages({"role": "user", "content": text}),
                                         time.time()) is not None

        # The connection plans append_fresh's statements while the session is small, as a
        # new store's first appends do; then the session grows under those plans.
        for i in range(10):
            append(f"early {i}")
        conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, \"timestamp\", state) "
                     "SELECT %s, 'bulk-' || n, 10 + n, 'user', 'filler', n, 'active' "
                     "FROM generate_series(1, 5000) AS n", (session_id,))
        with conn.transaction():
            for i in range(10):
                append(f"late {i}")
            fetched = conn.execute(READS).fetchone()[0]
        seqs = [row[0] for row in conn.execute(
            "SELECT seq FROM messages WHERE session_id = %s ORDER BY id DESC LIMIT 3", (session_id,))]
    # Each append reads a row or two (the session's last, for its seq); checking the uids by
    # reading the session's rows, as migration 0006's function did with the plan it kept,
    # fetched 5,000 a time.
    assert fetched <= 3 * 10, fetched
    assert seqs == [5020, 5019, 5018]


def test_a_fresh_append_of_a_stored_or_repeated_uid_writes_nothing_and_the_full_append_decides(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        session_id = store.create_session("cli").id
        first = store.append(session_id, {"role": "user", "content": "one", "uid": "u-1"})
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')
            stored = prepare_messages([{"role": "user", "content": "two", "uid": "u-2"},
                                       {"role": "user", "content": "one", "uid": "u-1"}])
            twice = prepare_messages([{"role": "user", "content": "three", "uid": "u-3"},
                                      {"role": "user", "content": "three", "uid": "u-3"}])
            alone = prepare_messages({"role": "user", "content": "one", "uid": "u-1"})
            large = prepare_messages([{"role": "user", "content": f"bulk {i}", "uid": f"b-{i}"} for i in range(999)]
                                     + [{"role": "user", "content": "one", "uid": "u-1"}])
            counters = ("SELECT message_count, tool_call_count, last_activity_at FROM sessions WHERE id = %s",
                        (session_id,))
            before = conn.execute(*counters).fetchone()
            for refused in (stored, twice, alone, large):
                assert messages.append_fresh(conn, session_id, refused, time.time() + 60) is None
            assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 1
            assert conn.execute(*counters).fetchone() == before
        again = store.append(session_id, [{"role": "user", "content": "two", "uid": "u-2"},
                                          {"role": "user", "content": "one", "uid": "u-1"}])
        assert again[1] == first[0] and again[0].seq == 2
        assert [m.uid for m in store.transcript(session_id)] == ["u-1", "u-2"]
        assert store.get_session(session_id).message_count == 2 and store.verify().problems == []


def test_small_and_large_fresh_batches_store_the_same_rows(pg_url, pg_schema):
    """Up to messages._SCALAR_BATCH messages the call spells its arrays out of scalar
    parameters, past it it passes arrays: the rows stored are the same either way."""
    def batch(tag: str, count: int) -> list[dict]:
        return [{"uid": f"{tag}-{i}", "role": ("user", "assistant", "tool")[i % 3], "content": f"{tag} {i} ünïcode",
                 "token_count": i if i % 2 else None, "timestamp": 1_800_000_000.0 + i,
                 **({"tool_call_id": f"call-{i}", "tool_name": "search"} if i % 3 == 2 else {})}
                for i in range(count)]

    at_limit, past_limit = messages._SCALAR_BATCH, messages._SCALAR_BATCH + 1
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        small, large = store.create_session("cli").id, store.create_session("cli").id
        stored = {small: store.append(small, batch("m", at_limit)), large: store.append(large, batch("m", past_limit))}
        for sid, count in ((small, at_limit), (large, past_limit)):
            read = store.transcript(sid)
            assert read == stored[sid] and [m.seq for m in read] == list(range(1, count + 1))
            assert [(m.uid, m.role, m.content, m.token_count, m.timestamp, m.tool_call_id) for m in read] == [
                (d["uid"], d["role"], d["content"], d["token_count"], d["timestamp"], d.get("tool_call_id"))
                for d in batch("m", count)]
        assert store.get_session(small).message_count == at_limit
        assert store.get_session(large).message_count == past_limit


def test_a_lone_caller_runs_every_call_on_one_connection(pg_url, pg_schema):
    """The pool hands out its connections first in, first out: had it two, a lone caller
    would alternate between them, each cold in the other's turn (docs/fleet.md)."""
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        session_id = store.create_session("cli").id
        for i in range(20):
            store.append(session_id, {"role": "user", "content": f"message {i}"})
        assert len(store.transcript(session_id)) == 20 and len(store.search("message")) == 20
        stats = store.backend._db.pool.get_stats()
    assert stats["connections_num"] == 1 and stats["pool_size"] == 1, stats
