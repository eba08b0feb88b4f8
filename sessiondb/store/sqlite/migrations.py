"""The schema, as an ordered list of small named migrations.

Each migration is applied in its own IMMEDIATE transaction together with the row that
records it, so a crash leaves it either wholly applied or not at all, and two processes
opening a new file at once cannot apply it twice. A file that records a migration this
release does not know was written by a newer sessiondb and is refused rather than guessed
at. Append new migrations at the end; never edit or reorder a released one.
"""

from __future__ import annotations

import time
import uuid
from typing import Callable

import apsw

from ...errors import NotASessionStore
from . import routing, search
from .connect import APPLICATION_ID


def _core(conn: apsw.Connection) -> None:
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


def _lineage(conn: apsw.Connection) -> None:
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


MIGRATIONS: list[tuple[str, Callable[[apsw.Connection], None]]] = [
    ("0001_core", _core),
    ("0002_search", search.install),  # full-text indexes over messages, kept by triggers
    ("0003_lineage", _lineage),
    ("0004_gateway_routing", routing.install),  # the gateway's key -> session index (S-32)
]


def migrate(conn: apsw.Connection) -> bool:
    """Bring the file's schema up to date, refusing files that are not ours.

    Returns whether anything was applied.
    """
    check_ownership(conn)
    known = [name for name, _ in MIGRATIONS]
    applied = _applied(conn)
    unknown = applied - set(known)
    if unknown:
        raise NotASessionStore(
            f"the store was written by a newer sessiondb (migration {sorted(unknown)[-1]}); "
            "upgrade sessiondb to open it"
        )
    if applied == set(known):
        return False
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT"
    )
    for name, apply in MIGRATIONS:
        if name in applied:
            continue
        with _immediate(conn):
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            apply(conn)
            conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)", (name, time.time()))
    return True


def _applied(conn: apsw.Connection) -> set[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return set()
    return {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}


def check_ownership(conn: apsw.Connection) -> None:
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return
    if app_id != 0:
        raise NotASessionStore(f"the file belongs to another application (application_id {app_id:#x})")
    foreign = conn.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT IN ('schema_migrations') "
        "AND name NOT LIKE 'sqlite_%' LIMIT 1"
    ).fetchone()
    if foreign:
        raise NotASessionStore(
            f"the file is a database that sessiondb did not create (it has a table {foreign[0]!r}); "
            "point sessiondb at its own store"
        )


class _immediate:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
        self.conn.execute("COMMIT" if exc_type is None else "ROLLBACK")
