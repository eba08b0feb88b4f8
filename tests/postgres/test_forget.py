"""Forget on a PostgreSQL store (S-55): the rows go from every table that held them (the
vectors and their queue too), the tables are vacuumed, and the receipt says what the server
itself keeps, since sessiondb owns no file of it to scan; `sessiondb forget` prints that."""

from __future__ import annotations

import psycopg
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
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


def test_the_cli_on_a_server_says_what_the_server_itself_keeps(pg_database):
    with sessiondb.open_store(pg_database) as store:
        people = {user: store.create_session("cli", user_id=user).id for user in ("alice", "bob")}
        for user, session_id in people.items():
            store.append(session_id, {"role": "user", "content": f"{user} talks about the quince orchard"})

    result = CliRunner().invoke(main, ["--store", pg_database, "forget", "--user", "alice", "--yes"])

    assert result.exit_code == 0, result.output  # nothing sessiondb owns holds a copy
    notes = [line for line in result.output.splitlines() if line.startswith("note: ")]
    assert any("write-ahead log" in note for note in notes), result.output
    with sessiondb.open_store(pg_database) as store:
        assert [hit.session_id for hit in store.search("quince")] == [people["bob"]]
