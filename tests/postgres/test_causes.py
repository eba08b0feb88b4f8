"""What the server brings: each failure reaches the caller as a sessiondb error with its cause."""

from __future__ import annotations


import psycopg
import pytest

import sessiondb
from sessiondb.errors import Cause
from sessiondb.guidance import explain
from sessiondb.store.postgres.errors import convert


def test_an_unreachable_server_is_unreachable_after_the_patience(tmp_path):
    url = f"postgresql://postgres@/postgres?host={tmp_path}&port=5432"  # no server listens there
    with pytest.raises(sessiondb.errors.ServerUnreachable) as caught:
        sessiondb.open_store(url, schema="s", patience=0.3)
    assert caught.value.cause is Cause.UNREACHABLE


def test_an_unknown_role_is_an_authentication_failure(pg_server, pg_schema):
    url = pg_server.url().replace("postgres@", "nobody@")
    with pytest.raises(sessiondb.errors.AuthenticationFailed) as caught:
        sessiondb.open_store(url, schema=pg_schema, patience=5)
    assert caught.value.cause is Cause.AUTH_FAILED


def test_a_read_only_server_refuses_writes_as_a_standby_would(pg_url, pg_schema):
    sessiondb.open_store(pg_url, schema=pg_schema).close()
    read_only = pg_url + "&options=-c%20default_transaction_read_only%3Don"  # the SQLSTATE a hot standby gives
    with sessiondb.open_store(read_only, schema=pg_schema) as store:
        with pytest.raises(sessiondb.errors.ReadOnlyStandby) as caught:
            store.create_session("cli")
        assert caught.value.cause is Cause.STANDBY
        assert store.list_sessions().items == []


def test_a_statement_past_its_timeout_is_a_statement_timeout(pg_url, pg_schema):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        s = store.create_session("cli")
    hurried = pg_url + "&options=-c%20statement_timeout%3D300"
    with sessiondb.open_store(hurried, schema=pg_schema) as store, psycopg.connect(pg_url) as holder:
        holder.execute(f'SELECT 1 FROM "{pg_schema}".sessions WHERE id = %s FOR UPDATE', (s.id,))  # held
        with pytest.raises(sessiondb.errors.StatementTimeout) as caught:
            store.append(s.id, {"role": "user", "content": "waits on the lock"})
        assert caught.value.cause is Cause.STATEMENT_TIMEOUT
        holder.rollback()
        assert store.transcript(s.id) == []


def test_a_full_server_disk_is_its_own_cause_with_its_first_step():
    error = convert(psycopg.errors.DiskFull("could not extend file: No space left on device"), "postgresql:///db")
    assert isinstance(error, sessiondb.errors.DiskFull) and error.cause is Cause.SERVER_DISK_FULL
    advice = explain(error.cause, db_path=__import__("pathlib").Path("postgresql:/db"), profile=None)
    assert "free space on the server" in advice.message
