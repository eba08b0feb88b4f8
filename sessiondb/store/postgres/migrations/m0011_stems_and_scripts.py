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
  in the `words` configuration; a word the stemmer does not know (another language) is
  kept as it is written, folded.
- `messages.stems`: each message's `indexable` text in that configuration.
  Filled by a trigger at insert when left out (every INSERT path leaves it out) and
  again when a row's role, content or parts change, so it can go neither stale nor
  missing; the rows already stored are filled here.
- `messages_stems`: a GIN index over it, of searchable (non-rewound) rows, as `words`.
"""

from __future__ import annotations

NAME = "0011_stems_and_scripts"

SQL = """
CREATE TEXT SEARCH CONFIGURATION {schema}.stems (COPY = pg_catalog.english);
ALTER TEXT SEARCH CONFIGURATION {schema}.stems
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH {ext}.unaccent, pg_catalog.english_stem;

CREATE FUNCTION {schema}.indexable(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN {schema}.has_cjk(t)
        THEN regexp_replace(t, '([\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]+)', ' \\1 ', 'g')
        ELSE t END
    FROM (SELECT normalize(replace($1, chr(65534) || '0', ' '), NFC) AS t) AS readable
$$;

CREATE OR REPLACE FUNCTION {schema}.has_cjk(text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT normalize($1, NFC) ~ '[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]'
$$;

CREATE OR REPLACE FUNCTION {schema}.search_fold(text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT lower({ext}.unaccent('{ext}.unaccent'::regdictionary, normalize($1, NFC)))
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

CREATE INDEX messages_stems ON {schema}.messages USING gin (stems) WHERE state <> 'rewound';
"""
