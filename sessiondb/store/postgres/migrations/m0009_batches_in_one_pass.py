"""Migration 0009_batches_in_one_pass, released: a large append costs the same per message
whatever its size; under 0008 its cost per message grew with the size of the batch.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

`append_fresh` reads a batch out of three arrays: every text column of every message in
`p_texts` (eleven per message), the token counts and the times. 0008's batch INSERT took
each value by subscript (`p_texts[k + 3]`). In the first five runs of that statement on a
connection PL/pgSQL plans it for the values it is given, and there a subscript into an
array of texts, or into one holding a NULL, walks the array from its start: a batch of n
messages took about n² steps, holding the session's row lock all along. Now each array
is read once, in order (`unnest ... WITH ORDINALITY`), and a message's eleven texts are
gathered into an array of their own, whose subscripts are short.

Measured with `bench/profile_pg_append.py --batch-sizes 16,64,1000,4000,8000`: one append
into a new session on a connection's second call (client and server together, median
of 3 rounds): 128, 55, 62, 151 and 283 us a message under 0008; 146, 69, 37, 38 and 39
under 0009. The contract suite's append of 20,001 messages (S-42) took 14.1 s and takes
1.2 s. From a connection's sixth such call on, PL/pgSQL's generic plan ran 0008's at
31-34 us a message at every size, 0009's at 38-41: the gathering's price, paid for a
bound.

Arguments, result, the one-message INSERT and the handling of a stored or repeated uid
are 0008's, spelled out again: a sessiondb of either release calls the same function.
"""

from __future__ import annotations

NAME = "0009_batches_in_one_pass"

SQL = """
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
            SELECT p_session, t[1], last_seq + n, t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], token, at_,
                   t[10], t[11], {schema}.message_words(t[2], t[3], t[4])
            FROM (SELECT (i - 1) / 11 + 1 AS n, array_agg(text_ ORDER BY i) AS t
                  FROM unnest(p_texts) WITH ORDINALITY AS texts(text_, i) GROUP BY 1) AS by_message
            JOIN unnest(p_tokens, p_times) WITH ORDINALITY AS numbers(token, at_, n) USING (n)
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
