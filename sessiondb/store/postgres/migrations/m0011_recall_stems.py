"""Migration 0011_recall_stems: the stemmed words recall looks up (sessiondb.recall).

Frozen once released: change the schema with a new migration appended to MIGRATIONS.

- `{schema}.stems`, a text search configuration: PostgreSQL's `english` (the Snowball
  English stemmer and its stop words) behind `unaccent`, so case and diacritics fold as
  in the `words` configuration; a word the stemmer does not know (another language) is
  kept as it is written, folded.
- `messages.stems`: each message's readable text (`search_text`) in that configuration,
  NFC-normalised first and with a NUL (stored escaped, postgres/text.py) read as a
  space, so NFD-stored text is found by an NFC question and text after a NUL is found,
  and each run of CJK text set apart by spaces (the characters of sessiondb.query's
  `has_cjk`), so a Latin word inside it is a word of its own.
  Filled by a trigger at insert when left out (every INSERT path leaves it out) and
  again when a row's role, content or parts change, so it can go neither stale nor
  missing; the rows already stored are filled here.
- `messages_stems`: a GIN index over it, of searchable (non-rewound) rows, as `words`.
"""

from __future__ import annotations

NAME = "0011_recall_stems"

SQL = """
CREATE TEXT SEARCH CONFIGURATION {schema}.stems (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION {schema}.stems
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH {ext}.unaccent, pg_catalog.english_stem;

CREATE FUNCTION {schema}.message_stems(role text, content text, parts text) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('{schema}.stems'::regconfig, CASE WHEN {schema}.has_cjk(t)
        THEN regexp_replace(t, '([\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+)', ' \\1 ', 'g')
        ELSE t END)
    FROM (SELECT normalize(replace({schema}.search_text(role, content, parts), chr(65534) || '0', ' '), NFC) AS t)
        AS readable
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

UPDATE {schema}.messages SET stems = {schema}.message_stems(role, content, parts);

CREATE INDEX messages_stems ON {schema}.messages USING gin (stems) WHERE state <> 'rewound';
"""
