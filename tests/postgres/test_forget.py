"""Forget on a PostgreSQL store (S-55): the rows go from every table that held them (the
vectors and their queue too), the tables are vacuumed, and the receipt says what the server
itself keeps, since sessiondb owns no file of it to scan."""

from __future__ import annotations

import psycopg

import sessiondb
from sessiondb.testing.contract.test_meaning import Concepts

TABLES = ("sessions", "messages", "usage", "turns", "message_vectors", "vectors_wanted")


def test_forget_leaves_no_row_of_the_person_and_vacuums_what_held_them(pg_server, pg_schema):
    with sessiondb.open_store(pg_server.url(), schema=pg_schema, embedder=Concepts()) as store:
        alice = store.create_session("cli", user_id="alice")
        store.append(alice.id, [{"role": "user", "content": f"alice's dog {i}"} for i in range(5)])
        store.record_usage(alice.id, model="m", input_tokens=3)
        store.begin_turn(alice.id)
        assert store.recall("Which pet?")  # her vectors are computed
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute(f"SET search_path TO {pg_schema}")
            held = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
            assert held["message_vectors"] == 5 and held["usage"] == 1 and held["turns"] == 1
            vacuumed = conn.execute("SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s "
                                    "AND relname = 'messages'", (pg_schema,)).fetchone()[0]

            receipt = store.forget(user_id="alice")

            assert receipt.sessions == [alice.id] and receipt.scanned == [] and receipt.remaining == []
            assert any("write-ahead log" in note and "base backup" in note for note in receipt.notes)
            assert {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES} == dict.fromkeys(
                TABLES, 0)
            conn.execute("SELECT pg_stat_force_next_flush()")
            assert conn.execute("SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s "
                                "AND relname = 'messages'", (pg_schema,)).fetchone()[0] > vacuumed
