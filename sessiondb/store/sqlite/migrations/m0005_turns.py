"""Migration 0005_turns: turn records (S-50..S-52), one row per turn of a session, with why
it ended and the failed file edits that still stood (turns.py reads and writes it).
Frozen once released: never edit it; change the table with a new migration."""

from __future__ import annotations

import apsw

NAME = "0005_turns"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE turns (
            seq          INTEGER PRIMARY KEY,  -- the order turns began in
            id           TEXT NOT NULL UNIQUE,
            session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            user_uid     TEXT,                 -- the user message that started it
            cwd          TEXT,
            started_at   REAL NOT NULL,
            ended_at     REAL,
            outcome      TEXT CHECK (outcome IN ('completed', 'interrupted', 'failed')),
            reason       TEXT,                 -- a name from the guidance table
            detail       TEXT,
            receipts     TEXT NOT NULL DEFAULT '[]',  -- JSON: failed edits still standing
            continued_by TEXT,                 -- the turn that took the waiting correction
            CHECK ((ended_at IS NULL) = (outcome IS NULL) AND (outcome IS NULL) = (reason IS NULL))
        ) STRICT;
        CREATE INDEX turns_session ON turns(session_id, seq);
        """
    )
