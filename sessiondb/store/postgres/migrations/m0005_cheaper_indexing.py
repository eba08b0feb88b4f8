"""Migration 0005_cheaper_indexing, released: what an append costs the server in index upkeep.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

Two costs of migration 0001 at every append, measured on the server alone (pgbench, one
client inserting one message per statement: 1,150 inserts/s before, 2,000-2,400/s after):

- `search_text` held a subquery, so PostgreSQL could not inline it: every INSERT planned
  its body again, once for the generated tsvector and once for each index over it. It
  is rewritten as one expression that the planner inlines; the walk of `parts` (only
  for a message without `content`) moves to `parts_text`, in PL/pgSQL, whose plan is
  kept for the connection's life. Same text, same results: the stored tsvectors and the
  index entries stay true, no row is rewritten.
- The pg_trgm index held the trigrams of every message's folded text, some eighty GIN
  entries for a message of ordinary prose, for the one kind of search words cannot
  serve: text written without spaces (CJK). It is rebuilt as a partial index over the
  messages whose folded text holds a CJK character (`has_cjk`: the character ranges of
  sessiondb.query). A search for a CJK term states that condition, which its LIKE
  implies (folding changes case and diacritics, never a CJK character), so the index
  serves it; a substring of other text (substring=True) is matched by a scan of the
  messages the filters select, newest first (postgres/search.py).
"""

from __future__ import annotations

NAME = "0005_cheaper_indexing"

SQL = """
CREATE FUNCTION {schema}.parts_text(parts text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    RETURN (SELECT string_agg(CASE jsonb_typeof(e)
                       WHEN 'string' THEN jsonb_build_array(e) ->> 0
                       WHEN 'object' THEN CASE WHEN jsonb_typeof(e -> 'text') = 'string' THEN e ->> 'text' END
                   END, E'\\n' ORDER BY i)
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof({schema}.json_value(parts)) = 'array'
                                           THEN {schema}.json_value(parts) ELSE '[]'::jsonb END) WITH ORDINALITY AS p(e, i));
END
$$;

CREATE OR REPLACE FUNCTION {schema}.search_text(role text, content text, parts text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN role = 'tool' THEN left(coalesce(content, {schema}.parts_text(parts), ''), 8192)
                ELSE coalesce(content, {schema}.parts_text(parts), '') END
$$;

CREATE FUNCTION {schema}.has_cjk(text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT $1 ~ '[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]'
$$;

DROP INDEX {schema}.messages_substrings;
CREATE INDEX messages_cjk_substrings ON {schema}.messages
    USING gin ({schema}.search_fold({schema}.search_text(role, content, parts)) {ext}.gin_trgm_ops)
    WHERE state <> 'rewound' AND {schema}.has_cjk({schema}.search_fold({schema}.search_text(role, content, parts)));
"""
