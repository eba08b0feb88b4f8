"""How the SQLite search indexes follow what their triggers see (rows moved to new ids and
sessions, edited text), index rows stored before the search migration, and rank within
their window. The search contract itself is tests/contract/test_search.py."""

from __future__ import annotations

import apsw
import pytest

import sessiondb
from sessiondb.store.sqlite import migrations, search as search_module


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "search.db") as s:
        yield s


def sql(store, statement, params=()):
    """A write the way internal write paths (compaction, rewind) make one: on the store's writer."""
    return store.backend._file.writer.run(lambda conn: conn.execute(statement, params).fetchall())


def check_indexes(store):
    """FTS5's own integrity check of both indexes against the messages they cover."""
    store.backend._file.writer.run(search_module.check_integrity)


def uids(hits):
    return [h.uid for h in hits]


def test_the_indexes_follow_rows_moved_to_new_ids_and_sessions(store):
    store.append(store.create_session("telegram").id, [
        {"uid": "plan", "role": "user", "content": "Three days of temples."},
        {"uid": "swap", "role": "user", "content": "Something quieter instead."},
    ])
    other = store.create_session("cli", title="Child")
    # What compaction does: archive rows, re-sequence the tail under new ids elsewhere.
    sql(store, "UPDATE messages SET id = id + 1000, session_id = ? WHERE uid = 'swap'", (other.id,))
    sql(store, "UPDATE messages SET content = 'now about osaka' WHERE uid = 'plan'")
    [hit] = store.search("quieter")
    assert hit.session_id == other.id and hit.message_id > 1000
    assert store.search("temples") == [] and uids(store.search("osaka")) == ["plan"]
    check_indexes(store)


def test_rows_stored_before_the_search_migration_are_indexed(tmp_path):
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT")
    migrations._core(conn)
    conn.execute("INSERT INTO schema_migrations VALUES ('0001_core', 0)")
    conn.execute("INSERT INTO sessions(id, source, started_at) VALUES ('old', 'cli', 0)")
    conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp, state) VALUES "
                 "('old', 'a', 1, 'user', 'legacy harbour talk', 1, 'active'), "
                 "('old', 'b', 2, 'user', 'rewound harbour talk', 2, 'rewound')")
    conn.close()
    with sessiondb.open_store(path) as store:
        assert uids(store.search("harbour")) == ["a"]
        check_indexes(store)


def test_hits_are_ranked_among_the_newest_matches(store, monkeypatch):
    s = store.create_session("cli")
    # The oldest message is the most relevant (shortest); newest first, the window of 2 ends at "b".
    store.append(s.id, [{"uid": "a", "role": "user", "content": "marmalade"},
                        {"uid": "b", "role": "user", "content": "marmalade on toast with butter and tea"},
                        {"uid": "c", "role": "user", "content": "marmalade on toast with butter, tea and jam"}])
    assert uids(store.search("marmalade"))[0] == "a"
    monkeypatch.setattr(search_module, "RANK_WINDOW", 2)
    assert uids(store.search("marmalade")) == ["b", "c"]
    assert uids(store.search("marmalade", session_id=s.id, role="user")) == ["b", "c"]
