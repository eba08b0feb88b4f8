"""Store.verify() on a server: a sound store passes, and each broken invariant is named."""

from __future__ import annotations

import uuid

import psycopg

import sessiondb


def test_a_sound_store_verifies_and_each_broken_invariant_is_named(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        s = store.create_session("cli")
        store.append(s.id, [{"uid": f"m{i}", "role": "user", "content": f"turn {i}"} for i in range(6)])
        lease = store.begin_compaction(s.id)
        child = store.commit_compaction(lease, [{"uid": "sum", "role": "system", "content": "summary"}],
                                        mode="rotate")
        report = store.verify()
        assert report.ok and report.checked["sessions"] == 2 and report.checked["messages"] == 7
        assert report.notes == []  # the suite's server runs in C.UTF-8: every letter has its case
        with store.backend.pool.connection() as conn:  # break invariants behind the store's back
            conn.execute("UPDATE sessions SET message_count = 99 WHERE id = %s", (s.id,))
            conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                         "VALUES (%s, 'm1', 1, 'user', 'twin', 0)", (child.id,))
            # A fall of seq no compaction explains (a kept message follows the row whose
            # seq its summary shares; nothing shares seq 8).
            conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                         "VALUES (%(s)s, 'late', 8, 'user', 'x', 0), (%(s)s, 'early', 7, 'user', 'y', 0)",
                         {"s": child.id})
        problems = store.verify().problems
        assert any("counters" in p and s.id in p for p in problems)
        assert any("uid is stored once" in p and "m1" in p for p in problems)
        assert any("seq never goes down" in p for p in problems)


def test_a_database_that_folds_only_ascii_case_is_named_in_a_note(pg_server, pg_url):
    """In a database whose LC_CTYPE is C the server lower-cases ASCII letters only, so a
    search misses other scripts' case variants: verify() says so, and what to do."""
    database = f"c_locale_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
        try:
            with sessiondb.open_store(pg_server.url(database)) as store:
                store.append(store.create_session("cli").id, {"role": "user", "content": "Москва зимой"})
                assert store.search("москва") == []  # what the note is about
                report = store.verify()
            assert report.ok and len(report.notes) == 1
            assert "LC_CTYPE is C" in report.notes[0] and "UTF-8 locale" in report.notes[0]
        finally:
            admin.execute(f"DROP DATABASE {database} WITH (FORCE)")
