"""Migration 0012_reasoning_words: a response's reasoning searchable on request.

Frozen once released: change the schema with a new migration appended to MIGRATIONS.

- `reasoning_words(reasoning)`: a message's reasoning (a model's thinking, kept by the
  importers and adapters) as words, in the `words` configuration and from the same
  `indexable` text as `message_words`.
- `messages_reasoning_words`: a GIN index over it, of the searchable (non-rewound) rows
  that have reasoning. An expression index rather than a stored column: nothing is added
  to a row, no row is rewritten here, and an append writes an index entry only when its
  message has reasoning. A search looks there only when it asks (include_reasoning).
"""

from __future__ import annotations

NAME = "0012_reasoning_words"

SQL = """
CREATE FUNCTION {schema}.reasoning_words(reasoning text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('{schema}.words'::regconfig, {schema}.indexable(reasoning))
$$;

CREATE INDEX messages_reasoning_words ON {schema}.messages USING gin ({schema}.reasoning_words(reasoning))
    WHERE reasoning IS NOT NULL AND state <> 'rewound';
"""
