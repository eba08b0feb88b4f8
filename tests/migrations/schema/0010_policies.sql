-- table compaction_leases on compaction_leases
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

-- table gateway_routes on gateway_routes
CREATE TABLE gateway_routes (
            key             TEXT PRIMARY KEY,
            session_id      TEXT NOT NULL,   -- in the store of `profile`, not necessarily this one
            profile         TEXT NOT NULL,   -- the owner the key names ('main': this store)
            state           TEXT NOT NULL DEFAULT 'idle'
                            CHECK (state IN ('idle', 'running', 'resume_pending', 'ended')),
            turn_started_at REAL,
            updated_at      REAL NOT NULL
        ) STRICT;

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

-- index messages_active on messages
CREATE INDEX messages_active ON messages(session_id, id) WHERE state = 'active';

-- trigger messages_search_changed on messages
CREATE TRIGGER messages_search_changed AFTER UPDATE OF id, role, content, parts ON messages
WHEN old.id IS NOT new.id OR old.role IS NOT new.role OR old.content IS NOT new.content
  OR old.parts IS NOT new.parts
BEGIN
    INSERT INTO search_touched(id) VALUES (old.id);
    INSERT INTO search_touched(id) SELECT new.id WHERE new.id IS NOT old.id;
    UPDATE search_freed SET id = old.id WHERE id < old.id AND new.id IS NOT old.id;
END;

-- trigger messages_search_gone on messages
CREATE TRIGGER messages_search_gone AFTER DELETE ON messages BEGIN
    INSERT INTO search_touched(id) VALUES (old.id);
    UPDATE search_freed SET id = old.id WHERE id < old.id;
END;

-- trigger messages_search_reused on messages
CREATE TRIGGER messages_search_reused AFTER INSERT ON messages
WHEN new.id <= (SELECT id FROM search_freed)
BEGIN
    INSERT INTO search_touched(id) VALUES (new.id);
END;

-- index messages_session on messages
CREATE INDEX messages_session ON messages(session_id, id);

-- index messages_uid on messages
CREATE UNIQUE INDEX messages_uid ON messages(session_id, uid);

-- table policies on policies
CREATE TABLE policies (
            key        TEXT PRIMARY KEY,
            value      TEXT NOT NULL,
            updated_at REAL NOT NULL
        ) STRICT;

-- table schema_migrations on schema_migrations
CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT;

-- table search_freed on search_freed
CREATE TABLE search_freed (
    id INTEGER NOT NULL
) STRICT;

-- table search_touched on search_touched
CREATE TABLE search_touched (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id  INTEGER NOT NULL
) STRICT;

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
        , parent_relation TEXT, active_minute INTEGER
            GENERATED ALWAYS AS (CAST(coalesce(last_activity_at, started_at) / 60 AS INTEGER)) VIRTUAL) STRICT;

-- index sessions_active_minute on sessions
CREATE INDEX sessions_active_minute ON sessions(active_minute DESC);

-- index sessions_key on sessions
CREATE INDEX sessions_key ON sessions(session_key) WHERE session_key IS NOT NULL;

-- index sessions_parent on sessions
CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

-- index sessions_title on sessions
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;

-- index sqlite_autoindex_compaction_leases_1 on compaction_leases
None;

-- index sqlite_autoindex_compaction_leases_2 on compaction_leases
None;

-- index sqlite_autoindex_gateway_routes_1 on gateway_routes
None;

-- index sqlite_autoindex_policies_1 on policies
None;

-- index sqlite_autoindex_schema_migrations_1 on schema_migrations
None;

-- index sqlite_autoindex_sessions_1 on sessions
None;

-- index sqlite_autoindex_store_meta_1 on store_meta
None;

-- index sqlite_autoindex_turns_1 on turns
None;

-- index sqlite_autoindex_usage_calls_1 on usage_calls
None;

-- table sqlite_sequence on sqlite_sequence
CREATE TABLE sqlite_sequence(name,seq);

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

-- table turns on turns
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

-- index turns_session on turns
CREATE INDEX turns_session ON turns(session_id, seq);

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

-- table usage_calls on usage_calls
CREATE TABLE usage_calls (
            call_id     TEXT PRIMARY KEY,
            session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            recorded_at REAL NOT NULL
        ) STRICT;

-- index usage_calls_session on usage_calls
CREATE INDEX usage_calls_session ON usage_calls(session_id, recorded_at);

