"""Migration 0004_gateway_routing, released: the gateway's key -> session index (S-32),
empty in every store but a gateway's (routing.py reads and writes it). Frozen: never edit
it; change the table with a new migration."""

from __future__ import annotations

import apsw

NAME = "0004_gateway_routing"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE gateway_routes (
            key             TEXT PRIMARY KEY,
            session_id      TEXT NOT NULL,   -- in the store of `profile`, not necessarily this one
            profile         TEXT NOT NULL,   -- the owner the key names ('main': this store)
            state           TEXT NOT NULL DEFAULT 'idle'
                            CHECK (state IN ('idle', 'running', 'resume_pending', 'ended')),
            turn_started_at REAL,
            updated_at      REAL NOT NULL
        ) STRICT;
        """
    )
