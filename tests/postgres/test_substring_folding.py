"""Substring search folds text the same way on both backends: query.fold, which the
embedded store calls, against the server's own search_fold (lower and unaccent)."""

from __future__ import annotations

import psycopg

import sessiondb
from sessiondb.query import fold

# Every letter of Latin-1 and Latin Extended-A, Greek with its tonos, Ё and ё, the Latin
# ligatures, and the full-width forms of ASCII (its punctuation too).
CHARACTERS = [chr(c) for c in [*range(0xC0, 0x180), *range(0x386, 0x3CF), 0x401, 0x451, *range(0xFB00, 0xFB07)]
              if chr(c).isalpha()] + [chr(c) for c in range(0xFF01, 0xFF5F)]


def test_fold_agrees_with_the_servers_search_fold_letter_by_letter(pg_url, pg_schema):
    sessiondb.open_store(pg_url, schema=pg_schema).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute(f'SET search_path TO "{pg_schema}", sessiondb_extensions')
        folded = conn.execute("SELECT array_agg(search_fold(c) ORDER BY n) FROM unnest(%s::text[]) "
                              "WITH ORDINALITY AS u(c, n)", (CHARACTERS,)).fetchone()[0]
        sentence = "Rendez-vous à l'École: Straße, Øre, Ёлка, ﬁnal Ａ"
        server = conn.execute("SELECT search_fold(%s)", (sentence,)).fetchone()[0]
    assert len(CHARACTERS) > 350
    assert {c: f for c, f in zip(CHARACTERS, folded) if fold(c) != f} == {}
    assert fold(sentence) == server == "rendez-vous a l'ecole: strasse, ore, елка, final a"
