"""Migration 0002_search, released: the full-text indexes over messages and the triggers
that keep them true (search.py explains the design and runs the queries).

Frozen: every statement is spelled out here, never borrowed from search.py, so that
changing how search works at run time cannot change what this migration built in the
stores that already ran it (the doctor compares those stores with this SQL). A change to
the indexes is a new migration appended at the end.

The readable-text expression appears in the view and in each trigger with a different
row alias (`m`, `new`, `old`); it is written once below as a template over `{row}`.
"""

from __future__ import annotations

import apsw

NAME = "0002_search"

_PARTS = (
    "(WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r "
    "WHERE i + 1 < json_array_length({row}.parts)) "
    "SELECT group_concat(CASE json_type({row}.parts, '$[' || r.i || ']') "
    "WHEN 'text' THEN json_extract({row}.parts, '$[' || r.i || ']') "
    "WHEN 'object' THEN iif(json_type({row}.parts, '$[' || r.i || '].text') = 'text', "
    "json_extract({row}.parts, '$[' || r.i || '].text'), NULL) END, char(10) ORDER BY r.i) FROM r)"
)
_READABLE = "coalesce({row}.content, " + _PARTS + ", '')"
_TEXT = "(CASE WHEN {row}.role = 'tool' THEN substr(" + _READABLE + ", 1, 8192) ELSE " + _READABLE + " END)"


def _text(row: str) -> str:
    return _TEXT.replace("{row}", row)


_VIEW = (
    "CREATE VIEW message_search_text(id, text) AS "
    f"SELECT m.id, {_text('m')} FROM messages AS m WHERE m.state <> 'rewound'"
)
_INDEXES = (
    "CREATE VIRTUAL TABLE messages_fts USING fts5(text, content='message_search_text', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 2')",
    "CREATE VIRTUAL TABLE messages_trigram USING fts5(text, content='message_search_text', "
    "content_rowid='id', tokenize='trigram remove_diacritics 1')",
)
_ADD = (
    f"INSERT INTO messages_fts(rowid, text) SELECT new.id, {_text('new')} WHERE new.state <> 'rewound';"
    f"INSERT INTO messages_trigram(rowid, text) SELECT new.id, {_text('new')} WHERE new.state <> 'rewound';"
)
_REMOVE = (
    f"INSERT INTO messages_fts(messages_fts, rowid, text) SELECT 'delete', old.id, {_text('old')} "
    "WHERE old.state <> 'rewound';"
    f"INSERT INTO messages_trigram(messages_trigram, rowid, text) SELECT 'delete', old.id, {_text('old')} "
    "WHERE old.state <> 'rewound';"
)
# While the indexes are stale (damaged, S-16) writes skip them; a rebuild catches up.
_LIVE = "NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'search_stale')"
# The line breaks and indentation inside the update trigger are part of the stored SQL.
_TRIGGERS = f"""
        CREATE TRIGGER messages_search_insert AFTER INSERT ON messages WHEN {_LIVE} BEGIN {_ADD} END;
        CREATE TRIGGER messages_search_delete AFTER DELETE ON messages WHEN {_LIVE} BEGIN {_REMOVE} END;
        CREATE TRIGGER messages_search_update AFTER UPDATE ON messages
        WHEN {_LIVE} AND (old.id IS NOT new.id OR old.role IS NOT new.role OR old.content IS NOT new.content
          OR old.parts IS NOT new.parts OR (old.state = 'rewound') IS NOT (new.state = 'rewound'))
        BEGIN {_REMOVE} {_ADD} END;
        """


def apply(conn: apsw.Connection) -> None:
    """The view, both indexes, their triggers; index the rows already stored."""
    conn.execute(_VIEW)
    for index in _INDEXES:
        conn.execute(index)
    conn.execute(_TRIGGERS)
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO messages_trigram(messages_trigram) VALUES ('rebuild')")
