"""Migration 0007_uid_check_by_index, released: an append's uid check costs the same in a
session of ten messages and in one of a hundred thousand.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

`append_fresh` (migrations 0001 and 0006) asked whether any uid of the batch was stored
in the session with `EXISTS (... WHERE session_id = p_session AND uid = ANY(uids))`.
PL/pgSQL plans that statement once per connection, and the plan it kept was the one its
first runs chose: on a new store, with the session's rows too few to tell the indexes
apart, it walked `messages_session` (session_id, id) and filtered the uids, reading every
row of the session at every append, for as long as the connection lived (the pool
replaces one after an hour). Measured with `bench/profile_pg_append.py --long-session
10000`, the server's CPU per append over each fifth of a 10,000-message session: 598,
1,248, 1,905, 2,741 and 2,583 us under 0006's function; 377, 400, 384, 346 and 385 us
under this one (tests/postgres/test_append_cost.py holds it to the rows it reads).

The check is now the insert itself: `ON CONFLICT (session_id, uid) DO NOTHING` probes
`messages_uid`, the unique index every insert writes into anyway, so no plan can choose
another path. A batch holding a stored uid, or one uid twice, inserts fewer rows than it
holds; the function then takes back the rows it inserted and returns NULL, as before,
and the caller runs the full append. Same rows, same result.
"""

from __future__ import annotations

NAME = "0007_uid_check_by_index"

SQL = """
CREATE OR REPLACE FUNCTION {schema}.append_fresh(
    p_session text, p_texts text[], p_tokens bigint[], p_times double precision[],
    p_active bigint, p_calls bigint, p_activity double precision) RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
    found_session record;
    last_seq bigint;
    ids bigint[];
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
    WITH inserted AS (
        INSERT INTO {schema}.messages(session_id, uid, seq, role, content, parts, tool_calls, tool_call_id,
                                      tool_name, reasoning, finish_reason, token_count, "timestamp",
                                      display_kind, state)
        SELECT p_session, p_texts[k + 1], last_seq + n, p_texts[k + 2], p_texts[k + 3], p_texts[k + 4],
               p_texts[k + 5], p_texts[k + 6], p_texts[k + 7], p_texts[k + 8], p_texts[k + 9], p_tokens[n],
               p_times[n], p_texts[k + 10], p_texts[k + 11]
        FROM generate_subscripts(p_times, 1) AS n, LATERAL (SELECT 11 * (n - 1) AS k) AS at_
        ORDER BY n
        ON CONFLICT (session_id, uid) DO NOTHING
        RETURNING id)
    SELECT array_agg(id ORDER BY id) INTO ids FROM inserted;
    IF coalesce(cardinality(ids), 0) < cardinality(p_times) THEN
        -- A uid stored already or given twice: nothing is kept, the full append decides.
        DELETE FROM {schema}.messages WHERE id = ANY(ids);
        RETURN NULL;
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
