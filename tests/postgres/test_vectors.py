"""A PostgreSQL store's vectors (sessiondb/store/postgres/vectors.py): compared by pgvector
where the server has it and by an exact scan in SQL where it does not, with the same
results; computed only for a store opened with an embedder, which enables the queue once.

The contract suite (sessiondb/testing/contract/test_meaning.py) runs on Debian's server,
which has no pgvector: the scan in SQL. The server that has pgvector here (the `pgserver`
wheel's PostgreSQL 16) lacks unaccent and pg_trgm, which a store needs, so pgvector's scan
is compared with the scan in SQL there over the table migration 0014 makes."""

from __future__ import annotations

import math
from array import array

import psycopg

import sessiondb
from sessiondb.embedding import vectors as unit_vectors
from sessiondb.store.postgres import vectors
from sessiondb.store.postgres.migrations import m0014_vectors
from sessiondb.testing.contract.test_meaning import Concepts

CHAT = ["I adopted a puppy last week", "My sister plays the violin", "We went hiking in the Alps",
        "Lunch is at noon, as always.", "Buddy chewed my violin case", "A trip to the mountain with the dog"]
QUESTIONS = ["Which pet do I have?", "music", "mountain trip", "the violin", "noon"]


def test_pgvector_ranks_as_the_scan_in_sql_does(pg_vector_server):
    embedder = Concepts()
    with psycopg.connect(pg_vector_server.url(), autocommit=True) as conn:
        conn.execute("CREATE SCHEMA scan; SET search_path TO scan; CREATE EXTENSION vector SCHEMA scan")
        conn.execute("CREATE TABLE messages (id bigint PRIMARY KEY)")
        conn.execute(m0014_vectors.SQL.split("CREATE TABLE {schema}.vectors_wanted")[0].replace("{schema}", "scan"))
        for i, vector in enumerate(unit_vectors(embedder, CHAT)):
            conn.execute("INSERT INTO messages VALUES (%s)", (i,))
            conn.execute("INSERT INTO message_vectors VALUES (%s, %s)", (i, array("f", vector).tolist()))
        assert vectors.similarity(conn) == vectors.BY_PGVECTOR, "the server with pgvector should compare by it"
        for asked in unit_vectors(embedder, QUESTIONS):
            ranked = {how: conn.execute(f"SELECT v.message_id, {how} AS s FROM message_vectors AS v "
                                        "ORDER BY s DESC, v.message_id", (array("f", asked).tolist(),)).fetchall()
                      for how in (vectors.BY_PGVECTOR, vectors.IN_SQL)}
            by_pgvector, in_sql = ranked.values()
            assert [mid for mid, _ in by_pgvector] == [mid for mid, _ in in_sql]
            assert all(math.isclose(a, b, abs_tol=1e-5) for (_, a), (_, b) in zip(by_pgvector, in_sql))


def test_a_server_without_pgvector_is_scanned_in_sql(pg_server, pg_schema):
    with sessiondb.open_store(pg_server.url(), schema=pg_schema, embedder=Concepts()) as store:
        session = store.create_session("cli")
        store.append(session.id, [{"uid": f"m{i}", "role": "user", "content": text} for i, text in enumerate(CHAT)])
        assert store.recall("Which pet do I have?")[0].uid == "m0"
    with psycopg.connect(pg_server.url()) as conn:
        conn.execute(f"SET search_path TO {pg_schema}, sessiondb_extensions")
        assert vectors.similarity(conn) == vectors.IN_SQL


def test_a_store_opened_without_an_embedder_queues_nothing_until_one_opens_it(pg_server, pg_schema):
    url = pg_server.url()
    with sessiondb.open_store(url, schema=pg_schema) as plain:
        session = plain.create_session("cli")
        plain.append(session.id, [{"uid": "old", "role": "user", "content": "I adopted a puppy last week"}])
    with psycopg.connect(url) as conn:
        conn.execute(f"SET search_path TO {pg_schema}")
        assert conn.execute("SELECT count(*) FROM vectors_wanted").fetchone()[0] == 0
    with sessiondb.open_store(url, schema=pg_schema, embedder=Concepts()) as store:
        store.append(session.id, [{"uid": "new", "role": "user", "content": "our dog barks"}])
        assert {h.uid for h in store.recall("pet")} == {"old", "new"}
        assert store.rebuild_vectors() == 2
