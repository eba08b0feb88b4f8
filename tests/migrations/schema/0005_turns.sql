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

-- view message_search_text on message_search_text
CREATE VIEW message_search_text(id, text) AS SELECT m.id, (CASE WHEN m.role = 'tool' THEN substr(coalesce(m.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(m.parts)) SELECT group_concat(CASE json_type(m.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(m.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(m.parts, '$[' || r.i || '].text') = 'text', json_extract(m.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(m.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(m.parts)) SELECT group_concat(CASE json_type(m.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(m.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(m.parts, '$[' || r.i || '].text') = 'text', json_extract(m.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) FROM messages AS m WHERE m.state <> 'rewound';

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

-- table messages_fts on messages_fts
CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='message_search_text', content_rowid='id', tokenize='unicode61 remove_diacritics 2');

-- table messages_fts_config on messages_fts_config
CREATE TABLE 'messages_fts_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table messages_fts_data on messages_fts_data
CREATE TABLE 'messages_fts_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table messages_fts_docsize on messages_fts_docsize
CREATE TABLE 'messages_fts_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table messages_fts_idx on messages_fts_idx
CREATE TABLE 'messages_fts_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

-- trigger messages_search_delete on messages
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages WHEN NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'search_stale') BEGIN INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', old.id, (CASE WHEN old.role = 'tool' THEN substr(coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE old.state <> 'rewound';INSERT INTO messages_trigram(messages_trigram, rowid, text) SELECT 'delete', old.id, (CASE WHEN old.role = 'tool' THEN substr(coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE old.state <> 'rewound'; END;

-- trigger messages_search_insert on messages
CREATE TRIGGER messages_search_insert AFTER INSERT ON messages WHEN NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'search_stale') BEGIN INSERT INTO messages_fts(rowid, text) SELECT new.id, (CASE WHEN new.role = 'tool' THEN substr(coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE new.state <> 'rewound';INSERT INTO messages_trigram(rowid, text) SELECT new.id, (CASE WHEN new.role = 'tool' THEN substr(coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE new.state <> 'rewound'; END;

-- trigger messages_search_update on messages
CREATE TRIGGER messages_search_update AFTER UPDATE ON messages
        WHEN NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'search_stale') AND (old.id IS NOT new.id OR old.role IS NOT new.role OR old.content IS NOT new.content
          OR old.parts IS NOT new.parts OR (old.state = 'rewound') IS NOT (new.state = 'rewound'))
        BEGIN INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', old.id, (CASE WHEN old.role = 'tool' THEN substr(coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE old.state <> 'rewound';INSERT INTO messages_trigram(messages_trigram, rowid, text) SELECT 'delete', old.id, (CASE WHEN old.role = 'tool' THEN substr(coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(old.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(old.parts)) SELECT group_concat(CASE json_type(old.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(old.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(old.parts, '$[' || r.i || '].text') = 'text', json_extract(old.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE old.state <> 'rewound'; INSERT INTO messages_fts(rowid, text) SELECT new.id, (CASE WHEN new.role = 'tool' THEN substr(coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE new.state <> 'rewound';INSERT INTO messages_trigram(rowid, text) SELECT new.id, (CASE WHEN new.role = 'tool' THEN substr(coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), ''), 1, 8192) ELSE coalesce(new.content, (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i + 1 < json_array_length(new.parts)) SELECT group_concat(CASE json_type(new.parts, '$[' || r.i || ']') WHEN 'text' THEN json_extract(new.parts, '$[' || r.i || ']') WHEN 'object' THEN iif(json_type(new.parts, '$[' || r.i || '].text') = 'text', json_extract(new.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r), '') END) WHERE new.state <> 'rewound'; END;

-- index messages_session on messages
CREATE INDEX messages_session ON messages(session_id, id);

-- table messages_trigram on messages_trigram
CREATE VIRTUAL TABLE messages_trigram USING fts5(text, content='message_search_text', content_rowid='id', tokenize='trigram remove_diacritics 1');

-- table messages_trigram_config on messages_trigram_config
CREATE TABLE 'messages_trigram_config'(k PRIMARY KEY, v) WITHOUT ROWID;

-- table messages_trigram_data on messages_trigram_data
CREATE TABLE 'messages_trigram_data'(id INTEGER PRIMARY KEY, block BLOB);

-- table messages_trigram_docsize on messages_trigram_docsize
CREATE TABLE 'messages_trigram_docsize'(id INTEGER PRIMARY KEY, sz BLOB);

-- table messages_trigram_idx on messages_trigram_idx
CREATE TABLE 'messages_trigram_idx'(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID;

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
        , parent_relation TEXT) STRICT;

-- index sessions_key on sessions
CREATE INDEX sessions_key ON sessions(session_key) WHERE session_key IS NOT NULL;

-- index sessions_parent on sessions
CREATE INDEX sessions_parent ON sessions(parent_session_id) WHERE parent_session_id IS NOT NULL;

-- index sessions_recent on sessions
CREATE INDEX sessions_recent ON sessions(coalesce(last_activity_at, started_at) DESC, id DESC);

-- index sessions_title on sessions
CREATE UNIQUE INDEX sessions_title ON sessions(title) WHERE title IS NOT NULL;

-- index sqlite_autoindex_compaction_leases_1 on compaction_leases
None;

-- index sqlite_autoindex_compaction_leases_2 on compaction_leases
None;

-- index sqlite_autoindex_gateway_routes_1 on gateway_routes
None;

-- index sqlite_autoindex_schema_migrations_1 on schema_migrations
None;

-- index sqlite_autoindex_sessions_1 on sessions
None;

-- index sqlite_autoindex_store_meta_1 on store_meta
None;

-- index sqlite_autoindex_turns_1 on turns
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

