"""Migration 0007_usage_calls: the ids of recent record_usage calls, so that a call run again
adds nothing twice (store/usage.py), the rule every backend keeps (PostgreSQL's 0004_usage_calls).

Frozen once released: never edit it; change the table with a new migration appended to MIGRATIONS.
A call's id is written in the same transaction as its counters; ids older than the longest
retry are pruned by the session's next call.
"""

from __future__ import annotations

import apsw

NAME = "0007_usage_calls"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE usage_calls (
            call_id     TEXT PRIMARY KEY,
            session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            recorded_at REAL NOT NULL
        ) STRICT;
        CREATE INDEX usage_calls_session ON usage_calls(session_id, recorded_at);
        """
    )
