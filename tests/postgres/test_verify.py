"""Store.verify() on a server: a sound store passes, and each broken invariant is named."""

from __future__ import annotations

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
        with store.backend.pool.connection() as conn:  # break three invariants behind the store's back
            conn.execute("UPDATE sessions SET message_count = 99 WHERE id = %s", (s.id,))
            conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                         "VALUES (%s, 'm1', 1, 'user', 'twin', 0)", (child.id,))
        problems = store.verify().problems
        assert any("counters" in p and s.id in p for p in problems)
        assert any("uid is stored once" in p and "m1" in p for p in problems)
        assert any("seq never goes down" in p for p in problems)
