"""A record_usage whose COMMIT landed but whose acknowledgement was lost is retried and
counted once.

The moment is made real: with `synchronous_standby_names` naming a standby that never
connects, a commit is written and flushed on the server, then waits for that standby
before it is acknowledged (wait event SyncRep). The test terminates that backend there
(pg_terminate_backend from another connection): the server keeps the commit, the client
sees its connection die, and the store runs the call again on a fresh connection.
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

import sessiondb
from sessiondb.store import usage as usage_rows

#: A backend whose commit is flushed but waits for the standby before it is acknowledged.
WAITING = "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' AND query = 'COMMIT'"


@pytest.fixture
def admin(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")  # its own statements never wait for the standby
        yield conn
        conn.execute("ALTER SYSTEM RESET synchronous_standby_names")
        conn.execute("SELECT pg_reload_conf()")


def test_a_record_usage_retried_after_its_commit_landed_adds_nothing_twice(pg_url, pg_schema, admin, monkeypatch):
    attempts = []
    record = usage_rows.record
    monkeypatch.setattr(usage_rows, "record", lambda rows, **kw: (attempts.append(kw["call_id"]), record(rows, **kw)))
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        sid = store.create_session("cli").id
        admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'sessiondb_absent_standby'")
        admin.execute("SELECT pg_reload_conf()")
        time.sleep(0.5)  # every process of the server reads the new setting
        failure = []
        call = threading.Thread(target=lambda: _record(store, sid, failure))
        call.start()
        killed = None
        deadline = time.monotonic() + 20
        while killed is None and time.monotonic() < deadline:
            row = admin.execute(WAITING).fetchone()
            if row is not None:  # committed on the server, not yet acknowledged
                assert admin.execute("SELECT pg_terminate_backend(%s)", (row[0],)).fetchone()[0]
                killed = row[0]
            time.sleep(0.005)
        admin.execute("ALTER SYSTEM RESET synchronous_standby_names")
        admin.execute("SELECT pg_reload_conf()")
        call.join(30)
        assert killed is not None, "the fault was never injected: no commit waited for the standby"
        assert not call.is_alive() and failure == []
        # The call ran twice, with one id, and its amounts were added once.
        assert len(attempts) == 2 and len(set(attempts)) == 1
        totals = store.usage(sid)
        assert (totals.calls, totals.input_tokens, totals.cost_usd) == (1, 100, 0.5)
        # A new call is a new id: it adds.
        store.record_usage(sid, model="m", input_tokens=1)
        assert store.usage(sid).calls == 2


def _record(store, sid, failure):
    try:
        store.record_usage(sid, model="m", input_tokens=100, cost_usd=0.5)
    except Exception as exc:  # reported by the test's assertions
        failure.append(exc)
