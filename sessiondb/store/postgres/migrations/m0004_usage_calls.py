"""Migration 0004_usage_calls, released: the ids of recent record_usage calls, so that a call
run again after its COMMIT succeeded but its acknowledgement was lost (the connection
killed at that moment) adds nothing twice (usage.py).

Frozen: never edit it; change the table with a new migration appended to MIGRATIONS.
A call's id is written in the same transaction as its counters; ids older than the
longest retry are pruned by the session's next call.
"""

from __future__ import annotations

NAME = "0004_usage_calls"

SQL = """
CREATE TABLE {schema}.usage_calls (
    call_id     text PRIMARY KEY,
    session_id  text NOT NULL REFERENCES {schema}.sessions(id) ON DELETE CASCADE,
    recorded_at double precision NOT NULL
);
CREATE INDEX usage_calls_session ON {schema}.usage_calls(session_id, recorded_at);
"""
