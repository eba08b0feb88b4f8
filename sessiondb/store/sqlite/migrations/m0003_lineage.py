"""Migration 0003_lineage, released: compaction leases and how a child session continues
its parent. Frozen: never edit it; change the schema with a new migration."""

from __future__ import annotations

import apsw

NAME = "0003_lineage"


def apply(conn: apsw.Connection) -> None:
    """Compaction leases, and how a child session continues its parent."""
    conn.execute(
        """
        -- 'compression': the child is the same conversation, rotated out of its parent by
        -- a compaction (tip() and late writes follow it); 'branch', or a caller's label
        -- ('reset', 'delegation'...): a different conversation, never followed.
        ALTER TABLE sessions ADD COLUMN parent_relation TEXT;

        -- At most one lease per session. A row, not a lock: appends never look at it.
        CREATE TABLE compaction_leases (
            session_id  TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
            token       INTEGER NOT NULL UNIQUE,  -- fencing token, from store_meta
            watermark   INTEGER NOT NULL,         -- highest message id when taken
            holder      TEXT,
            pid         INTEGER NOT NULL,
            host        TEXT NOT NULL,
            boot_id     TEXT,                     -- the holder's kernel boot
            pid_ns      TEXT,                     -- readlink /proc/self/ns/pid
            pid_start   INTEGER,                  -- start time, clock ticks since boot
            thread_id   INTEGER,
            ttl         REAL NOT NULL,
            acquired_at REAL NOT NULL,
            expires_at  REAL NOT NULL
        ) STRICT;

        -- The live view of a session (transcripts, resume, compaction) reads only active
        -- rows: after compactions most of a long session's rows are archived.
        CREATE INDEX messages_active ON messages(session_id, id) WHERE state = 'active';
        """
    )
    conn.execute("INSERT INTO store_meta(key, value) VALUES ('compaction_token', '0')")
