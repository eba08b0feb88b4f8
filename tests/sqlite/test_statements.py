"""A store's statements are planned once, when they are prepared.

SQLite otherwise plans around the values bound to a LIMIT or compared with a partial
index's word, and prepares such a statement again whenever another value is bound:
three statements of every append and its indexing did (bench/exact.py counted 1.87M
instructions an indexed append, 1.35M without). Every connection a store opens keeps the
query planner stability guarantee, and the words a partial index is made of are written
into the statement, so the index still serves the reads that name them."""

from __future__ import annotations

import apsw
import pytest

import sessiondb
from sessiondb.store.rows import above
from sessiondb.store.sql import SQLRows
from sessiondb.store.sqlite.store import DIALECT

QPSG = apsw.SQLITE_DBCONFIG_ENABLE_QPSG


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"role": "user", "content": f"message {i}"} for i in range(5)])
        store.search("message")  # the search index's connection, and a reader with it attached
        yield store


def test_every_connection_of_a_store_plans_once(store):
    shared = store.backend._file
    with shared.reader() as reader:
        connections = {"writer": shared.writer._conn, "reader": reader, "index": shared.indexer._connection()}
        assert {name: conn.config(QPSG, -1) for name, conn in connections.items()} == dict.fromkeys(connections, 1)


@pytest.mark.parametrize("where", [{"state": "active"}, {"state": "active", "id": above(2)}])
def test_a_read_of_the_live_rows_is_served_by_their_partial_index(store, where):
    sid = store.list_sessions().items[0].id
    ran = []
    with store.backend._file.reader() as conn:
        conn.exec_trace = lambda _cursor, sql, bindings: ran.append((sql, bindings)) or True
        try:
            found = SQLRows(conn, DIALECT).select("messages", {"session_id": sid, **where}, columns=("id",),
                                                  order=("id",), limit=10)
        finally:
            conn.exec_trace = None
        (text, bindings), = ran
        assert "'active'" in text  # a word of the index, not a bound value
        plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + text, bindings))
    assert "messages_active" in plan, plan
    assert len(found) == (5 if "id" not in where else 3)
