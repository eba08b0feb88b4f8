"""Migration 0006_hot_appends, released: an append's update of its session row is HOT, its
call carries three arrays where it carried thirteen, and the CJK trigram index decides
which messages it holds without folding every message's text.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

Measured per message (bench/profile_pg_append.py, pgbench on the server alone; docs/fleet.md):

- Every append updates its session's counters and `last_activity_at`. The recent-sessions
  index (migration 0001's `sessions_recent`) covered `last_activity_at`, so no such update
  could be HOT: each wrote a new entry into every index of `sessions` and left a dead one
  behind in each. The listing order now comes from `active_minute`, the minute of the
  activity time (floor of it over 60), a stored generated column: it changes at most once
  a minute per session, and an update that leaves every indexed value as it was is HOT
  (a new row version on the same page, no index touched). Ordering by the minute first,
  then by the time itself, is the same order, since the minute only grows with the time
  (store/listing.py orders and pages so; the index serves the minute, an incremental sort
  the rest). `fillfactor` leaves room on each page for those row versions.
- `append_fresh` took one array per column, thirteen of them; the client spent some forty
  microseconds of each single-message append turning them into parameters. It now takes
  the text columns of every message in one array (TEXT_COLUMNS of each message in turn,
  messages.append_fresh), the token counts and the times in two more; same checks, same
  rows, same result.
- The trigram index of migration 0005 held the messages whose *folded* text has a CJK
  character, so every insert folded its text (unaccent over all of it, then lower) only
  to test that condition. Folding never makes a CJK character out of another one nor
  takes one away (unaccent's rules hold none, and CJK characters have no case: checked
  over every code point by tests/postgres/test_migrations.py), so the condition is the
  same on the text itself, and is now stated so; a search for a CJK term states it too
  (postgres/search.py). The index is rebuilt, holding the same messages.
"""

from __future__ import annotations

NAME = "0006_hot_appends"

SQL = """
ALTER TABLE {schema}.sessions
    ADD COLUMN active_minute double precision
        GENERATED ALWAYS AS (floor(coalesce(last_activity_at, started_at) / 60)) STORED,
    SET (fillfactor = 90);
DROP INDEX {schema}.sessions_recent;
CREATE INDEX sessions_active_minute ON {schema}.sessions(active_minute DESC);

DROP INDEX {schema}.messages_cjk_substrings;
CREATE INDEX messages_cjk_substrings ON {schema}.messages
    USING gin ({schema}.search_fold({schema}.search_text(role, content, parts)) {ext}.gin_trgm_ops)
    WHERE state <> 'rewound' AND {schema}.has_cjk({schema}.search_text(role, content, parts));

DROP FUNCTION {schema}.append_fresh(text, text[], text[], text[], text[], text[], text[], text[], text[], text[],
                                    bigint[], double precision[], text[], text[], bigint, bigint, double precision);

-- As migration 0001's, but each message's text columns are eleven consecutive elements of
-- p_texts: uid, role, content, parts, tool_calls, tool_call_id, tool_name, reasoning,
-- finish_reason, display_kind, state. p_tokens and p_times hold one element per message.
CREATE FUNCTION {schema}.append_fresh(
    p_session text, p_texts text[], p_tokens bigint[], p_times double precision[],
    p_active bigint, p_calls bigint, p_activity double precision) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    found_session record;
    uids text[];
    last_seq bigint;
    ids bigint[];
BEGIN
    SELECT end_reason, parent_relation INTO found_session FROM {schema}.sessions
        WHERE id = p_session FOR NO KEY UPDATE;
    IF NOT FOUND OR found_session.end_reason IS NOT DISTINCT FROM 'compression'
            OR found_session.parent_relation IS NOT DISTINCT FROM 'compression' THEN
        RETURN NULL;
    END IF;
    uids := ARRAY(SELECT p_texts[11 * n - 10] FROM generate_subscripts(p_times, 1) AS n);
    -- Statements after the lock see what the previous holder committed.
    IF EXISTS (SELECT 1 FROM {schema}.messages WHERE session_id = p_session AND uid = ANY(uids))
            OR (SELECT count(DISTINCT u) FROM unnest(uids) AS u) < cardinality(uids) THEN
        RETURN NULL;
    END IF;
    SELECT coalesce((SELECT seq FROM {schema}.messages WHERE session_id = p_session ORDER BY id DESC LIMIT 1), 0)
        INTO last_seq;
    WITH inserted AS (
        INSERT INTO {schema}.messages(session_id, uid, seq, role, content, parts, tool_calls, tool_call_id,
                                      tool_name, reasoning, finish_reason, token_count, "timestamp",
                                      display_kind, state)
        SELECT p_session, p_texts[k + 1], last_seq + n, p_texts[k + 2], p_texts[k + 3], p_texts[k + 4],
               p_texts[k + 5], p_texts[k + 6], p_texts[k + 7], p_texts[k + 8], p_texts[k + 9], p_tokens[n],
               p_times[n], p_texts[k + 10], p_texts[k + 11]
        FROM generate_subscripts(p_times, 1) AS n, LATERAL (SELECT 11 * (n - 1) AS k) AS at_
        ORDER BY n
        RETURNING id)
    SELECT array_agg(id ORDER BY id) INTO ids FROM inserted;
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
