"""Migration 0011_stems_and_scripts: the stemmed words recall looks up (sessiondb.recall),
and every script found by search as by the embedded store.

Frozen once released: change the schema with a new migration appended to MIGRATIONS.

- `indexable(text)`: what both words columns are made from, as sessiondb.query.indexable
  makes it for the embedded store: NFC, a NUL (stored escaped, postgres/text.py) read as
  a space, each run of CJK text (the characters of `has_cjk`) set apart by spaces, so a
  Latin word inside it (`Python` in `我用Python写代码`) is a word of its own.
- `message_words` (the `words` column) is made from it too, and every stored row's words
  are made again; `search_fold` (substring matching) and `has_cjk` read their text in
  NFC, so NFD-stored `プログラミング`, `민수입니다` and `Café` are found by the NFC query;
  the trigram index over them is built again.

- `{schema}.stems`, a text search configuration: PostgreSQL's `english` (the Snowball
  English stemmer and its stop words) behind `unaccent`, so case and diacritics fold as
  in the `words` configuration; a word of another language goes through the same rules
  in the text and in the question, so it finds the same word (not its inflections).
- `messages.stems`: each message's `indexable` text in that configuration.
  Filled by a trigger at insert when left out (every INSERT path but `append_fresh`'s)
  and again when a row's role, content or parts change, so it can go neither stale nor
  missing; the rows already stored are filled here.
- `messages_stems`: a GIN index over it, of searchable (non-rewound) rows, as `words`.
- `append_fresh` (the common append) computes the stems in its INSERT, as it computes
  the words, rather than leaving them to the trigger.

What it costs an append: a second tsvector and its GIN entries. Measured on a private
server of a 2-core machine shared with other work (a 270-character ASCII message): a
batch of 8,000 messages 124 us a message before, 234 after; a one-message append about
1.35 ms before and 1.5-2.2 ms after (noisy). In SQL, `message_words` of such a text went
from 36 to 52 us and `message_stems` takes 68 us; `nfc` spares ASCII text normalize()'s
17 us.
"""

from __future__ import annotations

NAME = "0011_stems_and_scripts"

SQL = """
CREATE TEXT SEARCH CONFIGURATION {schema}.stems (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION {schema}.stems
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH {ext}.unaccent, pg_catalog.english_stem;

-- NFC, for the cost of a length comparison when the text is ASCII (NFC already, and most
-- text): normalize() costs some 17 us for 300 characters whatever they are.
CREATE FUNCTION {schema}.nfc(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length($1) = length($1) OR $1 IS NFC NORMALIZED THEN $1 ELSE normalize($1, NFC) END
$$;

CREATE FUNCTION {schema}.indexable(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length(t) <> length(t) AND t ~ '[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]'
        THEN regexp_replace(t, '([\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+)', ' \\1 ', 'g')
        ELSE t END
    FROM (SELECT {schema}.nfc(replace($1, chr(65534) || '0', ' ')) AS t) AS readable
$$;

CREATE OR REPLACE FUNCTION {schema}.has_cjk(text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN octet_length($1) = length($1) THEN false ELSE {schema}.nfc($1) ~ '[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]' END
$$;

CREATE OR REPLACE FUNCTION {schema}.search_fold(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower({ext}.unaccent('{ext}.unaccent'::regdictionary, {schema}.nfc($1)))
$$;

CREATE OR REPLACE FUNCTION {schema}.message_words(role text, content text, parts text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('{schema}.words'::regconfig, {schema}.indexable({schema}.search_text(role, content, parts)))
$$;

CREATE FUNCTION {schema}.message_stems(role text, content text, parts text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('{schema}.stems'::regconfig, {schema}.indexable({schema}.search_text(role, content, parts)))
$$;

ALTER TABLE {schema}.messages ADD COLUMN stems tsvector;

CREATE FUNCTION {schema}.fill_message_stems() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.stems := {schema}.message_stems(NEW.role, NEW.content, NEW.parts);
    RETURN NEW;
END
$$;

CREATE TRIGGER messages_stems_inserted BEFORE INSERT ON {schema}.messages
    FOR EACH ROW WHEN (NEW.stems IS NULL) EXECUTE FUNCTION {schema}.fill_message_stems();
CREATE TRIGGER messages_stems_changed BEFORE UPDATE OF role, content, parts ON {schema}.messages
    FOR EACH ROW EXECUTE FUNCTION {schema}.fill_message_stems();

UPDATE {schema}.messages SET words = {schema}.message_words(role, content, parts),
                              stems = {schema}.message_stems(role, content, parts);
REINDEX INDEX {schema}.messages_cjk_substrings;

-- 0009's, with the stems computed in the INSERT as the words are: the common append fires
-- no trigger (a trigger per row doubled an append's cost). Arguments and result unchanged.
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
                                      display_kind, state, words, stems)
        VALUES (p_session, p_texts[1], last_seq + 1, p_texts[2], p_texts[3], p_texts[4], p_texts[5], p_texts[6],
                p_texts[7], p_texts[8], p_texts[9], p_tokens[1], p_times[1], p_texts[10], p_texts[11],
                {schema}.message_words(p_texts[2], p_texts[3], p_texts[4]),
                {schema}.message_stems(p_texts[2], p_texts[3], p_texts[4]))
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
                                          display_kind, state, words, stems)
            SELECT p_session, t[1], last_seq + n, t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], token, at_,
                   t[10], t[11], {schema}.message_words(t[2], t[3], t[4]),
                   {schema}.message_stems(t[2], t[3], t[4])
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

CREATE INDEX messages_stems ON {schema}.messages USING gin (stems) WHERE state <> 'rewound';
"""
