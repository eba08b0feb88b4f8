"""Maintenance on a server: prune, ANALYZE and VACUUM run online; backup names pg_dump."""

from __future__ import annotations

import pytest

import sessiondb


def test_prune_deletes_the_inactive_sessions_and_their_routes_a_dry_run_nothing(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store, \
            sessiondb.open_store(pg_url, schema=pg_schema) as other_holder:
        old, fresh = store.create_session("cli"), store.create_session("cli")
        store.append(old.id, {"role": "user", "content": "long ago", "timestamp": 1_000.0})
        store.append(fresh.id, {"role": "user", "content": "just now"})
        store.routing.put("agent:main:cli:dm:1", old.id, "main")
        with store.backend.pool.connection() as conn:  # the session was started long ago too
            conn.execute("UPDATE sessions SET started_at = 1000 WHERE id = %s", (old.id,))
        preview = store.prune(older_than=86400, dry_run=True)
        assert preview.sessions == [old.id] and store.get_session(old.id)
        done = store.prune(older_than=86400)  # another handle holds the store: a server does not mind
        assert done.sessions == [old.id] and not done.warnings
        with pytest.raises(sessiondb.errors.NotFound):
            other_holder.get_session(old.id)
        assert store.routing.get("agent:main:cli:dm:1") is None and store.get_session(fresh.id)
        assert store.optimize().action == "optimize" and store.vacuum().action == "vacuum"


def test_backup_is_refused_with_the_servers_tool(pg_url, pg_schema, tmp_path):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        with pytest.raises(sessiondb.errors.InvalidInput, match="pg_dump --schema=" + pg_schema):
            store.backup(tmp_path / "copy.db")
        assert not (tmp_path / "copy.db").exists()
