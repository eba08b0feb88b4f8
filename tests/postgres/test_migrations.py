"""Migrations on a shared server: applied once whoever starts first, refused when newer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import psycopg
import pytest

import sessiondb
from sessiondb.query import _CJK, has_cjk
from sessiondb.store.postgres import messages, migrations
from sessiondb.store.postgres.migrations import MIGRATIONS

# Each process imports sessiondb, then waits for the same moment to open the store.
OPEN = ("import sys, time, sessiondb; time.sleep(max(0, float(sys.argv[3]) - time.time())); "
        "sessiondb.open_store(sys.argv[1], schema=sys.argv[2]).close()")


def test_ten_processes_opening_a_new_store_at_once_migrate_it_once(pg_url, pg_schema):
    at = repr(time.time() + 5)
    starts = [subprocess.Popen([sys.executable, "-c", OPEN, pg_url, pg_schema, at], stderr=subprocess.PIPE, text=True)
              for _ in range(10)]
    errors = [p.communicate(timeout=120)[1] for p in starts]
    assert all(p.returncode == 0 for p in starts), errors
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f'SELECT name FROM "{pg_schema}".schema_migrations ORDER BY name').fetchall()
    assert [r[0] for r in rows] == [name for name, _ in MIGRATIONS]


def test_a_schema_from_a_newer_sessiondb_is_refused(pg_url, pg_schema):
    sessiondb.open_store(pg_url, schema=pg_schema).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'INSERT INTO "{pg_schema}".schema_migrations VALUES (%s, 0)', ("9999_future",))
    with pytest.raises(sessiondb.errors.NotASessionStore, match="newer sessiondb"):
        sessiondb.open_store(pg_url, schema=pg_schema)


def test_a_schema_holding_someone_elses_tables_is_refused(pg_url, pg_schema):
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
        conn.execute(f'CREATE TABLE "{pg_schema}".invoices (id int)')
    with pytest.raises(sessiondb.errors.NotASessionStore, match="did not create"):
        sessiondb.open_store(pg_url, schema=pg_schema)


def test_profiles_on_one_server_are_kept_apart(pg_url):
    with sessiondb.open_store(pg_url, profile="alpha") as alpha, sessiondb.open_store(pg_url, profile="beta") as beta:
        s = alpha.create_session("cli", title="only in alpha")
        alpha.append(s.id, {"role": "user", "content": "alpha's secret"})
        assert beta.list_sessions().items == [] and beta.search("secret") == []
        assert alpha.search("secret")[0].session_id == s.id
        assert s.profile == "alpha" and beta.backend.schema == "sessiondb_beta"


def test_a_store_from_before_cheaper_indexing_keeps_every_row_and_finds_them(pg_url, pg_schema, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:4])  # the store a release before 0005 wrote
    # Its append_fresh takes other arguments (migration 0006): the full append writes the same rows.
    monkeypatch.setattr(messages, "append_fresh", lambda *args: None)
    written = [{"role": "user", "content": "東京の天気は晴れ"}, {"role": "user", "content": "hello kyoto"},
               {"role": "assistant", "parts": ["京都 and", {"type": "text", "text": "東京の天気"}]},
               {"role": "tool", "content": "x" * 9000 + " beyond", "tool_call_id": "c1"}]
    with sessiondb.open_store(pg_url, schema=pg_schema) as old:
        sid = old.create_session("cli").id
        before = old.append(sid, written)
    monkeypatch.undo()
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        assert store.transcript(sid) == before
        assert len(store.search("東京の天")) == 2 and len(store.search("llo kyo", substring=True)) == 1
        assert store.search("beyond", include_tools=True) == [] and store.verify().problems == []
    with psycopg.connect(pg_url) as conn:
        names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg_schema,))}
    assert "messages_cjk_substrings" in names and "messages_substrings" not in names


def test_the_trigram_index_holds_the_messages_the_query_parser_calls_cjk(pg_url, pg_schema):
    """The index's condition (has_cjk on the server) and the search's (sessiondb.query) must
    agree on every character, or a CJK search would miss what the index left out."""
    sessiondb.open_store(pg_url, schema=pg_schema).close()
    bounds = [ord(c) for pair in re.findall(r"(.)-(.)", _CJK.pattern[1:-1]) for c in pair]
    probes = sorted({chr(c + d) for c in bounds for d in (-1, 0, 1) if not 0xD800 <= c + d <= 0xDFFF} | {"a", "é", "東"})
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute(f'SELECT p, "{pg_schema}".has_cjk(p) FROM unnest(%s::text[]) AS p', (probes,)).fetchall()
    assert len(rows) == len(probes) and all(server == has_cjk(p) for p, server in rows)
    assert sum(server for _, server in rows) > len(probes) // 3  # the probes straddle every range


def test_folding_neither_makes_nor_takes_away_a_cjk_character(pg_url, pg_schema):
    """The trigram index holds the messages whose text has a CJK character, and a CJK
    term's LIKE matches folded text (migration 0006): exact only while folding keeps the
    answer of has_cjk, for every character there is."""
    sessiondb.open_store(pg_url, schema=pg_schema).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')
        changed, cjk = conn.execute(
            "SELECT count(*) FILTER (WHERE has_cjk(search_fold(chr(c))) IS DISTINCT FROM has_cjk(chr(c))), "
            "count(*) FILTER (WHERE has_cjk(chr(c))) FROM generate_series(1, 1114111) AS c "
            "WHERE c NOT BETWEEN 55296 AND 57343").fetchone()
    assert changed == 0 and cjk > 100_000


def test_a_store_from_before_hot_appends_keeps_its_listing_order_and_takes_appends(pg_url, pg_schema, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:5])  # the store a release before 0006 wrote
    monkeypatch.setattr(messages, "append_fresh", lambda *args: None)  # that release's takes other arguments
    minute = 1_800_000_000.0
    with sessiondb.open_store(pg_url, schema=pg_schema) as old:
        quiet = old.create_session("cli").id  # no activity: listed by when it started (now, before the rest)
        spread = [old.create_session("cli").id for _ in range(6)]
        for i, sid in enumerate(spread):
            old.append(sid, {"role": "user", "content": f"hello {i}", "timestamp": minute + 45.0 * i})
        before = {sid: old.transcript(sid) for sid in spread}
    monkeypatch.undo()
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        order = [*reversed(spread), quiet]
        assert [s.id for s in store.list_sessions(limit=100).items] == order
        page = store.list_sessions(limit=3)
        assert [s.id for s in page.items + store.list_sessions(limit=100, cursor=page.cursor).items] == order
        assert {sid: store.transcript(sid) for sid in spread} == before
        added = store.append(spread[0], {"role": "user", "content": "again", "timestamp": minute + 1000.0})
        assert added[0].seq == 2 and store.transcript(spread[0])[-1] == added[0]
        assert [s.id for s in store.list_sessions(limit=2).items] == [spread[0], spread[-1]]
        assert len(store.search("again")) == 1 and store.verify().problems == []
    with psycopg.connect(pg_url) as conn:
        names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s", (pg_schema,))}
        minutes = conn.execute(f'SELECT count(*) FROM "{pg_schema}".sessions '
                               "WHERE active_minute = floor(coalesce(last_activity_at, started_at) / 60)").fetchone()
    assert "sessions_active_minute" in names and "sessions_recent" not in names
    assert minutes == (7,)  # every row the upgrade found has its minute


def test_an_append_updates_its_session_row_without_a_new_index_entry(pg_url, pg_schema):
    """HOT: the append's update of the session row writes no index entry while the activity
    stays within its minute; the update that moves it to another minute does."""
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        session = store.create_session("cli")
    one = "SELECT append_fresh(%s, %s, ARRAY[NULL]::bigint[], ARRAY[%s]::float8[], 1, 0, %s)"
    counted = ("SELECT pg_stat_get_xact_tuples_updated(c.oid), pg_stat_get_xact_tuples_hot_updated(c.oid) "
               "FROM pg_class AS c WHERE c.oid = 'sessions'::regclass")
    started = session.started_at
    same_minute = started - started % 60 + 30.0 if started % 60 != 30.0 else started + 1.0
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')
        texts = lambda uid: [uid, "user", "hi", None, None, None, None, None, None, None, "active"]  # noqa: E731
        assert conn.execute(one, (session.id, texts("a"), same_minute, same_minute)).fetchone()[0] is not None
        assert conn.execute(counted).fetchone() == (1, 1)
        later = same_minute + 3600.0
        assert conn.execute(one, (session.id, texts("b"), later, later)).fetchone()[0] is not None
        assert conn.execute(counted).fetchone() == (2, 1)


def test_a_store_from_before_words_planned_once_keeps_its_words_and_computes_new_ones(pg_url, pg_schema, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:7])  # the store a release before 0008 wrote
    written = [{"role": "user", "content": "Hello Kyoto"}, {"role": "assistant", "parts": ["東京の天気", "École"]}]
    with sessiondb.open_store(pg_url, schema=pg_schema) as old:
        sid = old.create_session("cli").id
        before = old.append(sid, written)
    table = f"SELECT relfilenode FROM pg_class WHERE oid = '\"{pg_schema}\".messages'::regclass"
    with psycopg.connect(pg_url) as conn:
        words = f'SELECT id, words::text FROM "{pg_schema}".messages ORDER BY id'
        kept, file_before = conn.execute(words).fetchall(), conn.execute(table).fetchone()
    monkeypatch.undo()
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        assert store.transcript(sid) == before
        added = store.append(sid, [{"role": "user", "content": "sourdough"}, {"role": "user", "content": "école"}])
        assert [h.message_id for h in store.search("ecole")] == [added[1].id, before[1].id]
        assert [h.message_id for h in store.search("kyoto")] == [before[0].id] and store.verify().problems == []
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(words).fetchall()[:2] == kept and len(kept) == 2
        assert conn.execute(table).fetchone() == file_before  # no row rewritten: the upgrade takes no time
        generated = conn.execute("SELECT attgenerated FROM pg_attribute WHERE attrelid = %s::regclass "
                                 "AND attname = 'words'", (f'"{pg_schema}".messages',)).fetchone()
    assert generated == ("",)  # a plain column now: no INSERT plans its expression again


def test_a_store_from_before_batches_in_one_pass_takes_a_large_append_after_the_upgrade(pg_url, pg_schema, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:8])  # the store a release before 0009 wrote
    with sessiondb.open_store(pg_url, schema=pg_schema) as old:
        sid = old.create_session("cli").id
        before = old.append(sid, [{"role": "user", "content": f"early {i}"} for i in range(20)])
    monkeypatch.undo()
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        batch = [{"role": ("user", "assistant", "tool")[i % 3], "content": f"later {i}",
                  **({"tool_call_id": f"call-{i}"} if i % 3 == 2 else {}), **({"token_count": i} if i % 2 else {})}
                 for i in range(300)]
        added = store.append(sid, batch)
        assert store.transcript(sid) == before + added and [m.seq for m in added] == list(range(21, 321))
        assert [(m.role, m.content, m.token_count) for m in added] == [
            (b["role"], b["content"], b.get("token_count")) for b in batch]
        assert len(store.search("later", include_tools=True, limit=300)) == 300 and store.verify().problems == []
    with psycopg.connect(pg_url) as conn:
        names = [r[0] for r in conn.execute(f'SELECT name FROM "{pg_schema}".schema_migrations ORDER BY name')]
    assert names == [name for name, _ in MIGRATIONS] and "0009_batches_in_one_pass" in names


def test_a_store_from_before_escaped_json_reads_its_parts_and_tool_calls_as_written(pg_url, pg_schema, monkeypatch):
    monkeypatch.setattr(migrations, "MIGRATIONS", MIGRATIONS[:12])  # the store a release before 0013 wrote
    marked = "kept as written: \ufffe0 \ufffe\ufffe \ufffeud83d\ufffe"
    with sessiondb.open_store(pg_url, schema=pg_schema) as old:
        sid = old.create_session("cli").id
        (mid,) = [m.id for m in old.append(sid, {"role": "assistant", "parts": ["placeholder"],
                                                 "tool_calls": [{"id": "c1", "function": {"name": "f"}}]})]
    with psycopg.connect(pg_url) as conn:  # as that release stored them: U+FFFE as it was
        conn.execute(f'UPDATE "{pg_schema}".messages SET parts = %s, tool_calls = %s WHERE id = %s',
                     (json.dumps([marked], ensure_ascii=False),
                      json.dumps([{"id": "c1", "function": {"name": "f", "arguments": marked}}], ensure_ascii=False),
                      mid))
    monkeypatch.undo()
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        (message,) = store.transcript(sid)
    assert message.content == [marked] and message.tool_calls[0]["function"]["arguments"] == marked
