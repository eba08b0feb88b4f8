"""Migrations on a shared server: applied once whoever starts first, refused when newer."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest

import sessiondb
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
