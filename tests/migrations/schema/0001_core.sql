-- table messages on messages
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

-- index messages_session on messages
CREATE INDEX messages_session ON messages(session_id, id);

-- index messages_uid on messages
CREATE UNIQUE INDEX messages_uid ON messages(session_id, uid);

-- table schema_migrations on schema_migrations
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT;

-- table sessions on sessions
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

-- index sessions_key on sessions
CREATE INDEX sessions_key ON sessions(session_key) WHERE session_key IS NOT NULL;

-- index sessions_parent on sessions
CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

-- index sessions_recent on sessions
CREATE INDEX sessions_recent ON sessions(coalesce(last_activity_at, started_at) DESC, id DESC);

-- index sessions_title on sessions
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;

-- index sqlite_autoindex_schema_migrations_1 on schema_migrations
None;

-- index sqlite_autoindex_sessions_1 on sessions
None;

-- index sqlite_autoindex_store_meta_1 on store_meta
None;

-- table store_identity on store_identity
CREATE TABLE store_identity (
            generation TEXT NOT NULL,
            created_at REAL NOT NULL
        ) STRICT;

-- table store_meta on store_meta
CREATE TABLE store_meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) STRICT;

-- table usage on usage
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

