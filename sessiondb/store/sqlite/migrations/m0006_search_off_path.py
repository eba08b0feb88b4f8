"""Migration 0006_search_off_path, released: the search index leaves the store file.

The full-text index is derived data kept in its own file beside the store (see
store/sqlite/index/); the acknowledged transaction writes message rows only. This drops
what 0002_search built (its triggers made every append index its text inside the
transaction) and adds the one piece of bookkeeping the index needs from the store: a log
of the message ids whose row was deleted or changed in anything the index reads, so the
indexer can remove (and, if the id was reused, re-index) them. State changes are not
logged: the state is joined in at query time.

Appends write nothing here, save one kind: SQLite gives a new row the highest id + 1, so
once the newest rows are deleted a new row takes an id the index may already have passed
(the index follows appends by id, with a high-water mark that only rises). The highest id
ever freed is kept in `search_freed`, and an insert at or below it is logged like a
change: an unlogged insert is then always above every id the store ever held, and so
above the index's mark, by construction.

Frozen: every statement is spelled out here.
"""

from __future__ import annotations

import apsw

NAME = "0006_search_off_path"

_SQL = """
DROP TRIGGER messages_search_insert;
DROP TRIGGER messages_search_delete;
DROP TRIGGER messages_search_update;
DROP TABLE messages_fts;
DROP TABLE messages_trigram;
DROP VIEW message_search_text;
DELETE FROM store_meta WHERE key = 'search_stale';
-- AUTOINCREMENT: seq never goes back, even after processed rows are swept at optimize.
CREATE TABLE search_touched (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id  INTEGER NOT NULL
) STRICT;
-- One row: the highest message id ever deleted (or moved away from).
CREATE TABLE search_freed (
    id INTEGER NOT NULL
) STRICT;
INSERT INTO search_freed(id) VALUES (0);
CREATE TRIGGER messages_search_gone AFTER DELETE ON messages BEGIN
    INSERT INTO search_touched(id) VALUES (old.id);
    UPDATE search_freed SET id = old.id WHERE id < old.id;
END;
CREATE TRIGGER messages_search_changed AFTER UPDATE OF id, role, content, parts ON messages
WHEN old.id IS NOT new.id OR old.role IS NOT new.role OR old.content IS NOT new.content
  OR old.parts IS NOT new.parts
BEGIN
    INSERT INTO search_touched(id) VALUES (old.id);
    INSERT INTO search_touched(id) SELECT new.id WHERE new.id IS NOT old.id;
    UPDATE search_freed SET id = old.id WHERE id < old.id AND new.id IS NOT old.id;
END;
CREATE TRIGGER messages_search_reused AFTER INSERT ON messages
WHEN new.id <= (SELECT id FROM search_freed)
BEGIN
    INSERT INTO search_touched(id) VALUES (new.id);
END;
"""


def apply(conn: apsw.Connection) -> None:
    conn.execute(_SQL)
