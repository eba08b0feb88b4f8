"""Migration 0008_words_planned_once, released: an append no longer plans its message's
search words again at every INSERT, and a one-message append inserts its row directly.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

Measured with perf on the server process of a connection appending one message at a
time, and by that process's CPU time per append (docs/fleet.md):

- `words` was a stored generated column. PostgreSQL 15 prepares a generated column's
  expression at the start of every INSERT that writes the table, cached plan or not: it
  inlines `search_text` by parsing and analysing its SQL body again, then simplifies the
  result, about a tenth of the server's work per append. `words` is now a plain column
  with the same values. `message_words` is the one definition of them; `append_fresh`'s
  INSERT computes them through it, in the plan PL/pgSQL keeps for the connection; a
  batch's INSERT reads each text out of the arrays once, in a subquery the planner keeps
  (`OFFSET 0`), and computes the words from those (reading the arrays again for the words
  made a batch of 8,000 messages a third slower). Every other INSERT that leaves them out
  (the full append, a branch's copy, an import, an older sessiondb still running during
  an upgrade) gets them from a trigger, as before from the generated column, and a change
  of a row's role, content or parts computes them again, so no row's words can go stale
  or missing by any path. The column keeps its values and its GIN index; no row is
  rewritten.
- A one-message `append_fresh` (the common append) inserts its row with VALUES instead
  of a set of one row built from the arrays, sorted and collected: the set's scans and
  sort were prepared at every call, as every executor node is. Its uid check is the same
  `ON CONFLICT` probe: a stored uid inserts nothing, and the function returns NULL
  having written nothing, as for a batch.
"""

from __future__ import annotations

NAME = "0008_words_planned_once"

SQL = """
CREATE FUNCTION {schema}.message_words(role text, content text, parts text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('{schema}.words'::regconfig, {schema}.search_text(role, content, parts))
$$;

ALTER TABLE {schema}.messages ALTER COLUMN words DROP EXPRESSION;

CREATE FUNCTION {schema}.fill_message_words() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.words := {schema}.message_words(NEW.role, NEW.content, NEW.parts);
    RETURN NEW;
END
$$;

CREATE TRIGGER messages_words_inserted BEFORE INSERT ON {schema}.messages
    FOR EACH ROW WHEN (NEW.words IS NULL) EXECUTE FUNCTION {schema}.fill_message_words();
CREATE TRIGGER messages_words_changed BEFORE UPDATE OF role, content, parts ON {schema}.messages
    FOR EACH ROW EXECUTE FUNCTION {schema}.fill_message_words();

CREATE OR REPLACE FUNCTION {schema}.append_fresh(
    p_session text, p_texts text[], p_tokens bigint[], p_times double precision[],
    p_active bigint, p_calls bigint, p_activity double precision) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    found_session record;
    last_seq bigint;
    ids bigint[];
    one_id bigint;
BEGIN
    SELECT end_reason, parent_relation INTO found_session FROM {schema}.sessions
        WHERE id = p_session FOR NO KEY UPDATE;
    IF NOT FOUND OR found_session.end_reason IS NOT DISTINCT FROM 'compression'
            OR found_session.parent_relation IS NOT DISTINCT FROM 'compression' THEN
        RETURN NULL;
    END IF;
    -- Statements after the lock see what the previous holder committed.
    SELECT coalesce((SELECT seq FROM {schema}.messages WHERE session_id = p_session ORDER BY id DESC LIMIT 1), 0)
        INTO last_seq;
    IF cardinality(p_times) = 1 THEN
        INSERT INTO {schema}.messages(session_id, uid, seq, role, content, parts, tool_calls, tool_call_id,
                                      tool_name, reasoning, finish_reason, token_count, "timestamp",
                                      display_kind, state, words)
        VALUES (p_session, p_texts[1], last_seq + 1, p_texts[2], p_texts[3], p_texts[4], p_texts[5], p_texts[6],
                p_texts[7], p_texts[8], p_texts[9], p_tokens[1], p_times[1], p_texts[10], p_texts[11],
                {schema}.message_words(p_texts[2], p_texts[3], p_texts[4]))
        ON CONFLICT (session_id, uid) DO NOTHING
        RETURNING id INTO one_id;
        IF one_id IS NULL THEN
            RETURN NULL;  -- the uid is stored already: nothing written, the full append decides
        END IF;
        ids := ARRAY[one_id];
    ELSE
        WITH inserted AS (
            INSERT INTO {schema}.messages(session_id, uid, seq, role, content, parts, tool_calls, tool_call_id,
                                          tool_name, reasoning, finish_reason, token_count, "timestamp",
                                          display_kind, state, words)
            SELECT p_session, uid, last_seq + n, role, content, parts, tool_calls, tool_call_id, tool_name,
                   reasoning, finish_reason, p_tokens[n], p_times[n], display_kind, state,
                   {schema}.message_words(role, content, parts)
            FROM (SELECT n, p_texts[k + 1] AS uid, p_texts[k + 2] AS role, p_texts[k + 3] AS content,
                         p_texts[k + 4] AS parts, p_texts[k + 5] AS tool_calls, p_texts[k + 6] AS tool_call_id,
                         p_texts[k + 7] AS tool_name, p_texts[k + 8] AS reasoning, p_texts[k + 9] AS finish_reason,
                         p_texts[k + 10] AS display_kind, p_texts[k + 11] AS state
                  FROM generate_subscripts(p_times, 1) AS n, LATERAL (SELECT 11 * (n - 1) AS k) AS at_
                  OFFSET 0) AS batch
            ORDER BY n
            ON CONFLICT (session_id, uid) DO NOTHING
            RETURNING id)
        SELECT array_agg(id ORDER BY id) INTO ids FROM inserted;
        IF coalesce(cardinality(ids), 0) < cardinality(p_times) THEN
            -- A uid stored already or given twice: nothing is kept, the full append decides.
            DELETE FROM {schema}.messages WHERE id = ANY(ids);
            RETURN NULL;
        END IF;
    END IF;
    IF p_active > 0 THEN
        UPDATE {schema}.sessions SET message_count = message_count + p_active,
            tool_call_count = tool_call_count + p_calls,
            last_activity_at = greatest(last_activity_at, p_activity)
        WHERE id = p_session;
    END IF;
    RETURN last_seq || ids;
END
$$;
"""
