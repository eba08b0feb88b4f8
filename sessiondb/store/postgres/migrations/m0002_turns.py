"""Migration 0002_turns, released: turn records (S-50..S-52), one row per turn of a session,
with why it ended and the failed file edits that still stood (turns.py reads and writes it).

Frozen: never edit it; change the table with a new migration appended to MIGRATIONS.
The columns are the export format's (sessiondb.formats), receipts as JSON text; `seq`
keeps the order turns began in.
"""

from __future__ import annotations

NAME = "0002_turns"

SQL = """
CREATE TABLE {schema}.turns (
    seq          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    session_id   text NOT NULL REFERENCES {schema}.sessions(id) ON DELETE CASCADE,
    user_uid     text,
    cwd          text,
    started_at   double precision NOT NULL,
    ended_at     double precision,
    outcome      text CHECK (outcome IN ('completed', 'interrupted', 'failed')),
    reason       text,
    detail       text,
    receipts     text NOT NULL DEFAULT '[]',
    continued_by text,
    CHECK ((ended_at IS NULL) = (outcome IS NULL) AND (outcome IS NULL) = (reason IS NULL))
);
CREATE INDEX turns_session ON {schema}.turns(session_id, seq);
"""
