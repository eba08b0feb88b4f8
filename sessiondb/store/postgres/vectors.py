"""A PostgreSQL store's vectors of meaning (sessiondb.embedding), kept beside its messages.

The server has no embedder: the client's computes the vectors, for the messages that a
trigger queued in `vectors_wanted` (migration 0014) as they were stored or their text
changed. The trigger is enabled by the first handle opened with an embedder (`enable`),
which queues every message already stored; a store nobody recalls by meaning pays nothing
per append. A recall first computes what is queued (`catch_up`), in batches of BATCH, each
one transaction that deletes the queue rows with the vectors it writes (two clients
catching up take turns, by the lock of `vector_state`'s row); an append never waits for it.

The vectors are compared by pgvector's inner product where the server has the extension
(migration 0014 creates it where it may), else by an exact scan in SQL: the same results,
slower over a large store. `vector_state.space` names the embedder whose vectors they are;
vectors of another are never compared with a question's (sessiondb.embedding.other_space).
"""

from __future__ import annotations

from array import array
from typing import Any, Callable

import psycopg

from ...embedding import Embedder, Space, other_space, vectors
from ..sql import from_stored

BATCH = 500  # queued messages embedded per transaction
TRIGGER = "messages_vectors_wanted"
_TEXT = "search_text(m.role, m.content, m.parts)"


def enable(conn: psycopg.Connection) -> None:
    """Queue every message from now on, and those stored before (once: a later call finds
    the trigger enabled). Takes the messages table's lock for a moment, once per store."""
    enabled = conn.execute("SELECT tgenabled <> 'D' FROM pg_trigger WHERE tgrelid = 'messages'::regclass "
                           "AND tgname = %s", (TRIGGER,)).fetchone()[0]
    if not enabled:
        conn.execute(f"ALTER TABLE messages ENABLE TRIGGER {TRIGGER}")
        conn.execute("INSERT INTO vectors_wanted(message_id) SELECT id FROM messages ON CONFLICT DO NOTHING")


def catch_up(run: Callable[[Callable[[psycopg.Connection], Any]], Any], embedder: Embedder) -> str | None:
    """Compute the queued messages' vectors through `run` (a transaction, retried whole);
    None once the queue is empty, else why it cannot be (another embedder's vectors).
    embedding.EmbedderFailed if the embedder fails."""
    space = Space.of(embedder).key
    while True:
        outcome = run(lambda conn: _batch(conn, embedder, space))
        if outcome is not True:
            return outcome


def _batch(conn: psycopg.Connection, embedder: Embedder, space: str) -> str | None | bool:
    """One batch: True when more may be queued, None when the queue is done, a sentence
    when the vectors are another embedder's."""
    stored = conn.execute("SELECT space FROM vector_state FOR UPDATE").fetchone()[0]
    if stored not in ("", space):
        return other_space(stored, space)
    rows = conn.execute(
        f"SELECT w.message_id, {_TEXT} FROM vectors_wanted AS w JOIN messages AS m ON m.id = w.message_id "
        "ORDER BY w.message_id LIMIT %s", (BATCH,)).fetchall()
    if not rows:
        return None
    said = [(mid, from_stored(text)) for mid, text in rows if text and not text.isspace()]
    made = vectors(embedder, [text for _, text in said])
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO message_vectors(message_id, vector) VALUES (%s, %s) "
            "ON CONFLICT (message_id) DO UPDATE SET vector = EXCLUDED.vector",
            [(mid, array("f", vector).tolist()) for (mid, _), vector in zip(said, made)])
    conn.execute("DELETE FROM vectors_wanted WHERE message_id = ANY(%s)", ([mid for mid, _ in rows],))
    if stored != space:
        conn.execute("UPDATE vector_state SET space = %s", (space,))
    return True if len(rows) == BATCH else None


def forget(conn: psycopg.Connection) -> None:
    """Drop every vector and queue every message again (a rebuild, by another embedder)."""
    conn.execute("DELETE FROM message_vectors")
    conn.execute("UPDATE vector_state SET space = ''")
    conn.execute("INSERT INTO vectors_wanted(message_id) SELECT id FROM messages ON CONFLICT DO NOTHING")


def held(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM message_vectors").fetchone()[0]


#: A row's similarity to the question (its vector the parameter): the inner product, by
#: pgvector (in C), or summed in SQL by a server without it.
BY_PGVECTOR = "-(v.vector::vector <#> %s::real[]::vector)"
IN_SQL = "(SELECT sum(a * b) FROM unnest(v.vector, %s::real[]) AS t(a, b))"


def similarity(conn: psycopg.Connection) -> str:
    """BY_PGVECTOR where the server has the extension, else IN_SQL."""
    if conn.execute("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')").fetchone()[0]:
        return BY_PGVECTOR
    return IN_SQL
