"""Migration 0014_vectors: where a store keeps its messages' vectors of meaning (vectors.py).

Frozen once released: change the schema with a new migration appended to MIGRATIONS.

- `message_vectors`: each message's unit vector (float4, as sessiondb.embedding computes
  them), gone with its message.
- `vectors_wanted`: the messages whose vector is still to be computed, queued by a
  trigger at every insert and every change of a message's text, in the same transaction.
  The trigger is made disabled: a store nobody recalls by meaning pays nothing per append
  (a trigger per row doubled an append's cost, 0011). The first handle opened with an
  embedder enables it and queues every message already stored (vectors.enable).
- `vector_state`: one row, the embedder whose vectors these are ('' before the first).
"""

from __future__ import annotations

NAME = "0014_vectors"

SQL = """
CREATE TABLE {schema}.message_vectors (
    message_id bigint PRIMARY KEY REFERENCES {schema}.messages(id) ON DELETE CASCADE,
    vector real[] NOT NULL
);
CREATE TABLE {schema}.vectors_wanted (
    message_id bigint PRIMARY KEY REFERENCES {schema}.messages(id) ON DELETE CASCADE
);
CREATE TABLE {schema}.vector_state (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    space text NOT NULL
);
INSERT INTO {schema}.vector_state(space) VALUES ('');

CREATE FUNCTION {schema}.want_vector() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO {schema}.vectors_wanted(message_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END
$$;
CREATE TRIGGER messages_vectors_wanted AFTER INSERT OR UPDATE OF role, content, parts ON {schema}.messages
    FOR EACH ROW EXECUTE FUNCTION {schema}.want_vector();
ALTER TABLE {schema}.messages DISABLE TRIGGER messages_vectors_wanted;
"""
