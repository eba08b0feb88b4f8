"""Migration 0001_core, released: the tables of sessions, messages and usage, and the
file's identity. Frozen: never edit it; change the schema with a new migration."""

from __future__ import annotations

import time
import uuid

import apsw

from ..connect import APPLICATION_ID

NAME = "0001_core"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        -- One row, written once: the generation stamp that identifies this file. The
        -- safety checks read its page straight from the main file to notice a file
        -- copied over the store, so nothing else may ever be stored in this table.
        CREATE TABLE store_identity (
            generation TEXT NOT NULL,
            created_at REAL NOT NULL
        ) STRICT;

        CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;

        CREATE TABLE sessions (
            id                TEXT PRIMARY KEY,
            source            TEXT NOT NULL,
            profile           TEXT,
            session_key       TEXT,
            user_id           TEXT,
            chat_id           TEXT,
            chat_type         TEXT,
            thread_id         TEXT,
            title             TEXT,
            model             TEXT,
            parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
            started_at        REAL NOT NULL,
            ended_at          REAL,
            end_reason        TEXT,
            last_activity_at  REAL,
            message_count     INTEGER NOT NULL DEFAULT 0,
            tool_call_count   INTEGER NOT NULL DEFAULT 0,
            pinned            INTEGER NOT NULL DEFAULT 0,
            archived          INTEGER NOT NULL DEFAULT 0,
            hidden            INTEGER NOT NULL DEFAULT 0,
            metadata          TEXT NOT NULL DEFAULT '{}'
        ) STRICT;
        CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;
        CREATE INDEX sessions_recent ON sessions(coalesce(last_activity_at, started_at) DESC, id DESC);
        CREATE INDEX sessions_key ON sessions(session_key) WHERE session_key IS NOT NULL;
        CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

        CREATE TABLE messages (
            id           INTEGER PRIMARY KEY,
            session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            uid          TEXT NOT NULL,
            seq          INTEGER NOT NULL,
            role         TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
            content      TEXT,
            parts        TEXT,
            tool_calls   TEXT,
            tool_call_id TEXT,
            tool_name    TEXT,
            reasoning    TEXT,
            finish_reason TEXT,
            token_count  INTEGER,
            timestamp    REAL NOT NULL,
            display_kind TEXT,
            state        TEXT NOT NULL DEFAULT 'active'
                         CHECK (state IN ('active', 'compacted', 'rewound'))
        ) STRICT;
        -- Identity: a uid is stored once per session (S-01). Order: a session's rows are
        -- read in id order, which is the order they were committed in.
        CREATE UNIQUE INDEX messages_uid ON messages(session_id, uid);
        CREATE INDEX messages_session ON messages(session_id, id);

        CREATE TABLE usage (
            session_id         TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            model              TEXT NOT NULL,
            provider           TEXT NOT NULL DEFAULT '',
            task               TEXT NOT NULL DEFAULT '',
            input_tokens       INTEGER NOT NULL DEFAULT 0,
            output_tokens      INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            reasoning_tokens   INTEGER NOT NULL DEFAULT 0,
            cost_usd           REAL NOT NULL DEFAULT 0,
            calls              INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (session_id, model, provider, task)
        ) STRICT, WITHOUT ROWID;
        """
    )
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    conn.execute(
        "INSERT INTO store_identity(generation, created_at) VALUES (?, ?)",
        (f"sessiondb-generation:{uuid.uuid4().hex}", time.time()),
    )
