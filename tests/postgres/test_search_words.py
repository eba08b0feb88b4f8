"""Every row's search words are its text's, whichever statement wrote it (migration 0008:
append_fresh computes them in its INSERT, a trigger for every other)."""

from __future__ import annotations

import time

import psycopg

import sessiondb
from sessiondb.inputs import prepare_messages
from sessiondb.store.postgres import messages

STALE = ("SELECT id FROM messages WHERE words IS NULL "
         "OR words IS DISTINCT FROM to_tsvector('words', search_text(role, content, parts)) ORDER BY id")


def _connect(pg_url: str, pg_schema: str) -> psycopg.Connection:
    conn = psycopg.connect(pg_url, autocommit=True)
    conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')
    return conn


def test_each_way_of_writing_a_row_gives_it_the_words_of_its_text(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        sid = store.create_session("cli").id
        one = messages.append_fresh(conn, sid, prepare_messages({"role": "user", "content": "Kyoto École"}), time.time())
        batch = messages.append_fresh(conn, sid, prepare_messages(
            [{"role": "assistant", "parts": ["shrine", {"type": "text", "text": "東京の天気"}]},
             {"role": "tool", "content": "ramen " * 2000 + "beyond", "tool_call_id": "c1"}]), time.time())
        assert one is not None and batch is not None
        # The full append (a stored uid among new ones) writes through store/lineage.py.
        full = store.append(sid, [{"role": "user", "content": "Kyoto École", "uid": one[0].uid},
                                  {"role": "user", "content": "sourdough hydration"}])
        branch = store.branch(sid, full[-1].id)
        # What an older sessiondb's insert does during an upgrade: leaves the words out.
        conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, \"timestamp\") "
                     "VALUES (%s, 'older', 99, 'user', 'written by an older release', 0)", (sid,))
        conn.execute("UPDATE messages SET content = 'edited fushimi' WHERE id = %s", (batch[0].id,))
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 5 + 4
        assert conn.execute(STALE).fetchall() == []
        assert conn.execute("SELECT count(*) FROM messages WHERE words = ''::tsvector").fetchone()[0] == 0
        assert {h.session_id for h in store.search("ecole")} == {sid, branch.id}
        assert [h.message_id for h in store.search("fushimi")] == [batch[0].id]
        assert len(store.search("older release")) == 1
        assert {h.session_id for h in store.search("shrine")} == {branch.id}  # the copy kept its parts


def test_a_one_message_fresh_append_of_a_stored_uid_writes_nothing(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        sid = store.create_session("cli").id
        first = store.append(sid, {"role": "user", "content": "one", "uid": "u-1"})
        again = prepare_messages({"role": "user", "content": "one", "uid": "u-1"})
        assert messages.append_fresh(conn, sid, again, time.time()) is None
        assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 1
        assert store.append(sid, {"role": "user", "content": "one", "uid": "u-1"}) == first
        assert store.get_session(sid).message_count == 1


def test_one_message_and_batch_fresh_appends_store_the_same_rows(pg_url, pg_schema):
    """A one-message append_fresh inserts with VALUES, a batch from its arrays (0008)."""
    shapes = [{"role": "user", "content": "plain ünïcode", "timestamp": 1_800_000_000.0},
              {"role": "assistant", "parts": ["a", {"type": "text", "text": "b"}], "token_count": 7,
               "reasoning": "because", "finish_reason": "stop", "timestamp": 1_800_000_001.0,
               "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
              {"role": "tool", "content": "out", "tool_call_id": "c1", "tool_name": "f", "display_kind": "tool",
               "timestamp": 1_800_000_002.0}]
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        alone, together = store.create_session("cli").id, store.create_session("cli").id
        for shape in shapes:
            assert messages.append_fresh(conn, alone, prepare_messages(shape), time.time()) is not None
        assert messages.append_fresh(conn, together, prepare_messages(shapes), time.time()) is not None
        columns = "uid IS NOT NULL, seq, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning, " \
                  "finish_reason, token_count, timestamp, display_kind, state, words"
        rows = {sid: conn.execute(f"SELECT {columns} FROM messages WHERE session_id = %s ORDER BY id",
                                  (sid,)).fetchall() for sid in (alone, together)}
        counts = {sid: conn.execute("SELECT message_count, tool_call_count, last_activity_at FROM sessions "
                                    "WHERE id = %s", (sid,)).fetchone() for sid in (alone, together)}
    assert rows[alone] == rows[together] and len(rows[alone]) == 3
    assert counts[alone] == counts[together] == (3, 1, 1_800_000_001.0)


def test_verify_names_a_row_whose_words_are_not_its_texts(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        sid = store.create_session("cli").id
        kept, damaged = store.append(sid, [{"role": "user", "content": "kyoto"}, {"role": "user", "content": "osaka"}])
        conn.execute("UPDATE messages SET words = to_tsvector('simple', 'elsewhere') WHERE id = %s", (damaged.id,))
        assert store.verify().problems == [
            f"the search words of every row are its text's: message {damaged.id} carries stale search words"]
        assert [h.message_id for h in store.search("kyoto")] == [kept.id] and store.search("osaka") == []


def test_verify_names_a_row_whose_recall_stems_are_not_its_texts(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        sid = store.create_session("cli").id
        kept, damaged = store.append(sid, [{"role": "user", "content": "kyoto"}, {"role": "user", "content": "osaka"}])
        conn.execute("UPDATE messages SET stems = to_tsvector('simple', 'elsewhere') WHERE id = %s", (damaged.id,))
        assert store.verify().problems == [
            f"the recall stems of every row are its text's: message {damaged.id} carries stale recall stems"]
        assert [h.message_id for h in store.recall("kyoto?")] == [kept.id] and store.recall("osaka?") == []


def test_an_edit_of_a_row_s_text_makes_its_stems_again(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, _connect(pg_url, pg_schema) as conn:
        sid = store.create_session("cli").id
        (message,) = store.append(sid, [{"role": "user", "content": "kyoto"}])
        conn.execute("UPDATE messages SET content = 'researched in osaka' WHERE id = %s", (message.id,))
        assert [h.message_id for h in store.recall("What did we research?")] == [message.id]
        assert store.recall("kyoto?") == [] and store.verify().problems == []
