"""Full-text search: tsquery over the words index for words, LIKE (with pg_trgm for CJK) for substrings.

A parsed query (sessiondb.query) compiles to SQL whose shape depends only on how many
terms it has; every term reaches the server as a bound parameter, never as SQL:

- words: each term is `phraseto_tsquery('words', term)` (a word the parser splits, like
  "col:kyoto", is a phrase of its parts, as in the embedded backend); a prefix term is
  `to_tsquery('words', lexemes)` over lexemes made here of the term's word characters
  only, each quoted, so nothing of tsquery's syntax can come from what was typed. Groups
  are joined with `&&`, a group's terms with `||`, exclusions with `&& !!`.
- substrings (CJK text, or substring=True): each term is a LIKE on the folded text
  (lower case, no accents) with `%`, `_` and `\\` escaped. The trigram index (migrations
  0005 and 0006) holds only messages whose text has a CJK character: it serves a query
  with a group of CJK terms of three characters or more. Any other substring query is
  a scan of the messages its filters select, newest first, stopping once it has the
  newest RANK_WINDOW matches: the same hits, at a cost that grows with the messages
  scanned rather than with the matches (one session's or one conversation's messages, with
  session_id).

Ranking: word hits by ts_rank over the stored tsvector (ties newest first), among the
newest RANK_WINDOW matches (query.RANK_WINDOW, the same on every backend). Their
snippets are ts_headline over a bounded window of each hit's text around its first match
(query.snippet_window), never over the whole text, whose cost grows faster than its size.
Substring hits are ranked by bm25 over their terms that a trigram index serves
(query.through_trigrams: three or more characters of CJK text; how often each occurs in
the folded text, how rare it is among the matches, against the text's length), among
the newest RANK_WINDOW matches, as the embedded store ranks its trigram hits; when no
group is made of such terms (Latin substrings, short terms) they come newest first with
a score of 0, as there.
"""

from __future__ import annotations

import re
from array import array
from typing import Any

import psycopg

from ...model import SearchHit
from ...recall import (
    COMMON_MESSAGES, NEAREST, SCAN_SCORE, SPREAD_FROM, Recall, best, favour, found_by, fuse, rarer, spread,
)
from ...query import (
    ELLIPSIS, HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN, LIKE_SNIPPET_CONTEXT, RANK_WINDOW, SNIPPET_SCAN, Query, Term,
    has_cjk, like_pattern, like_snippet, snippet_window, through_trigrams, windowed,
)
from ..sql import from_stored
from . import vectors

_WORD = re.compile(r"[^\W_]+")
_TEXT = "search_text(m.role, m.content, m.parts)"
_FOLDED = f"search_fold({_TEXT})"
_HEADLINE = (f"StartSel={HIGHLIGHT_OPEN}, StopSel={HIGHLIGHT_CLOSE}, MaxWords=16, MinWords=6, ShortWord=0, "
             f"MaxFragments=1, FragmentDelimiter={ELLIPSIS}")
_HIT = "m.id, m.session_id, m.uid, m.role, m.timestamp, m.state, s.title, s.source"
#: A message's reasoning as words (migration 0012, whose index serves it).
_THOUGHTS = "reasoning_words(m.reasoning)"


def _tsquery(term: Term, params: list[Any]) -> str:
    if term.prefix:
        lexemes = [f"'{word}'" for word in _WORD.findall(term.text)]
        if lexemes:
            lexemes[-1] += ":*"
            params.append(" <-> ".join(lexemes))
            return "to_tsquery('words', %s)"
    params.append(term.text)
    return "phraseto_tsquery('words', %s)"


def _words(query: Query, params: list[Any]) -> str:
    groups = ["(" + " || ".join(_tsquery(t, params) for t in group) + ")" for group in query.groups]
    sql = " && ".join(groups)
    if query.excluded:
        sql = f"({sql}) && !!(" + " || ".join(_tsquery(t, params) for t in query.excluded) + ")"
    return sql


def _substrings(query: Query, params: list[Any]) -> list[str]:
    conditions = []
    if any(all(has_cjk(t.text) for t in group) for group in query.groups):
        # Implied by a CJK term's LIKE (folding neither makes nor removes a CJK character),
        # written out so the planner takes the trigram index, which holds only the messages
        # meeting it (migration 0006).
        conditions.append(f"has_cjk({_TEXT})")
    for group in query.groups:
        conditions.append("(" + " OR ".join(f"{_FOLDED} LIKE search_fold(%s)" for _ in group) + ")")
        params += [like_pattern(t.text) for t in group]
    for term in query.excluded:
        conditions.append(f"{_FOLDED} NOT LIKE search_fold(%s)")
        params.append(like_pattern(term.text))
    return conditions


def search(conn: psycopg.Connection, query: Query, *, profile: str | None, source: str | None,
           user_id: str | None, session_ids: tuple[str, ...] | None, role: str | None, since: float | None,
           until: float | None, include_tools: bool, include_reasoning: bool, limit: int) -> list[SearchHit]:
    """The best `limit` hits for a parsed query, best first. With include_reasoning, words
    match a message's reasoning too (migration 0012's index), each judged whole."""
    if query.empty:
        return []
    where, params = ["m.state <> 'rewound'"], []
    tsquery_params: list[Any] = []
    tsquery = None if query.substring else _words(query, tsquery_params)
    reasoning = include_reasoning and tsquery is not None
    if reasoning:
        where.append(f"(m.words @@ ({tsquery}) OR m.reasoning IS NOT NULL AND {_THOUGHTS} @@ ({tsquery}))")
        params += tsquery_params * 2
    elif tsquery is not None:
        where.append(f"m.words @@ ({tsquery})")
        params += tsquery_params
    _filter(where, params, [("coalesce(s.profile, 'main') = %s", profile), ("s.source = %s", source),
                            ("s.user_id = %s", user_id)])
    _on_messages(where, params, session_ids=session_ids, role=role, since=since, until=until,
                 include_tools=include_tools)
    if tsquery is None:
        where += _substrings(query, params)
        return _substring_hits(conn, query, where, params, limit)
    # The tsquery is written out where it is used, never hidden in a CTE, and the statement
    # is planned for its own values (prepare=False): the planner then sees how common the
    # words are, and walks the newest messages backwards for a common word instead of
    # collecting every one of its matches.
    # Only the first SNIPPET_SCAN characters of a hit's text are read: its snippet is cut
    # from a window of them (query.snippet_window), so it costs the same whatever the text.
    score = f"ts_rank(words, {tsquery})"
    if reasoning:  # the better of the text's rank and the reasoning's
        score = f"greatest({score}, ts_rank(reasoning_words(reasoning), {tsquery}))"
    rows = conn.execute(
        f"WITH window_ AS (SELECT {_HIT}, m.words, m.content, m.parts, m.reasoning FROM messages AS m "
        f"JOIN sessions AS s ON s.id = m.session_id WHERE {' AND '.join(where)} "
        "ORDER BY m.id DESC LIMIT %s), "
        f"best AS (SELECT *, {score} AS score FROM window_ ORDER BY score DESC, id DESC LIMIT %s) "
        f"SELECT id, session_id, uid, role, timestamp, state, title, source, "
        f"left(search_text(role, content, parts), {SNIPPET_SCAN + 1}), score, "
        f"{f'left(reasoning, {SNIPPET_SCAN + 1})' if reasoning else 'NULL'} "
        "FROM best ORDER BY score DESC, id DESC",
        (*params, RANK_WINDOW, *tsquery_params * (2 if reasoning else 1), limit),
        prepare=False).fetchall()
    texts = [row[8] or "" for row in rows]
    snippets = _cut(conn, tsquery, tsquery_params, texts, query.needles)
    # A hit its text does not match was found in its reasoning: the snippet is cut from there.
    thought = [i for i, snippet in enumerate(snippets) if not snippet and rows[i][10]]
    for i, snippet in zip(thought, _cut(conn, tsquery, tsquery_params, [rows[i][10] for i in thought],
                                        query.needles)):
        snippets[i] = snippet
    return [_hit(row[:8], snippet or text[:2 * LIKE_SNIPPET_CONTEXT], float(row[9]))
            for row, text, snippet in zip(rows, texts, snippets)]


def _cut(conn: psycopg.Connection, tsquery: str, tsquery_params: list[Any], texts: list[str],
         needles: list[str]) -> list[str]:
    """Each text's snippet for `tsquery`: its headline over a window around its first match,
    marked where the window cut it ("" where the window holds no match)."""
    spans = [snippet_window(text, needles, words=True) for text in texts]
    cut = headlines(conn, tsquery, tsquery_params, [text[start:end] for text, (start, end) in zip(texts, spans)])
    return [windowed(headline, *span, len(text)) if headline else "" for text, span, headline in zip(texts, spans, cut)]


def headlines(conn: psycopg.Connection, tsquery: str, tsquery_params: list[Any], texts: list[str],
              config: str = "words") -> list[str]:
    """ts_headline of each text for `tsquery` in text search configuration `config` ("" where
    it has no match), in order."""
    if not texts:
        return []
    rows = conn.execute(
        f"SELECT CASE WHEN to_tsvector('{config}', t) @@ q THEN ts_headline('{config}', t, q, %s) ELSE '' END "
        f"FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, n) CROSS JOIN (SELECT {tsquery}) AS found(q) ORDER BY n",
        (_HEADLINE, texts, *tsquery_params), prepare=False).fetchall()
    return [row[0] for row in rows]


# bm25 over the substrings, as the embedded store ranks its trigram hits: a term counts
# for how often it occurs in the folded text (the substring's occurrences), weighed by
# how rare it is among the ranked matches and against the text's length in characters.
_BM25 = """
WITH window_ AS (
    SELECT {hit}, {text} AS text, {folded} AS folded FROM messages AS m JOIN sessions AS s ON s.id = m.session_id
    WHERE {where} ORDER BY m.id DESC LIMIT %s),
needle AS (SELECT DISTINCT search_fold(n) AS n FROM unnest(%s::text[]) AS n),
found AS (
    SELECT w.id, needle.n, (length(w.folded) - length(replace(w.folded, needle.n, ''))) / length(needle.n) AS tf,
           length(w.folded)::float8 / greatest((SELECT avg(length(folded)) FROM window_), 1) AS relative_length
    FROM window_ AS w CROSS JOIN needle),
rarity AS (
    SELECT n, ln(((SELECT count(*) FROM window_) - count(*) FILTER (WHERE tf > 0) + 0.5)
                 / (count(*) FILTER (WHERE tf > 0) + 0.5) + 1) AS idf
    FROM found GROUP BY n),
scored AS (
    SELECT found.id, sum(rarity.idf * found.tf * ({k1} + 1)
                         / (found.tf + {k1} * (1 - {b} + {b} * found.relative_length))) AS score
    FROM found JOIN rarity USING (n) GROUP BY found.id)
SELECT w.id, w.session_id, w.uid, w.role, w.timestamp, w.state, w.title, w.source, left(w.text, {scan}), scored.score
FROM window_ AS w JOIN scored USING (id) ORDER BY scored.score DESC, w.id DESC LIMIT %s
"""
_K1, _B = 1.2, 0.75  # bm25's usual constants, the embedded store's too


def _substring_hits(conn: psycopg.Connection, query: Query, where: list[str], params: list[Any],
                    limit: int) -> list[SearchHit]:
    """Substring hits: ranked by bm25 over the terms a trigram index serves (query.through_trigrams:
    CJK text) among the newest RANK_WINDOW matches; newest first with a score of 0 when no
    group is made of such terms (the embedded store then scans without an index to rank by)."""
    needles = [t.text for group in query.groups for t in group]
    ranked = [t.text for group in query.groups if all(through_trigrams(t.text) for t in group) for t in group]
    if not ranked:
        rows = conn.execute(
            f"SELECT {_HIT}, left({_TEXT}, {SNIPPET_SCAN + 1}) FROM messages AS m JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.id DESC LIMIT %s", (*params, limit), prepare=False).fetchall()
        return [_hit(row[:8], like_snippet(row[8], needles), 0.0) for row in rows]
    statement = _BM25.format(hit=_HIT, text=_TEXT, folded=_FOLDED, where=" AND ".join(where), k1=_K1, b=_B,
                             scan=SNIPPET_SCAN + 1)
    rows = conn.execute(statement, (*params, RANK_WINDOW, ranked, limit), prepare=False).fetchall()
    return [_hit(row[:8], like_snippet(row[8], needles), float(row[9])) for row in rows]


def _filter(where: list[str], params: list[Any], filters: list[tuple[str, Any]]) -> None:
    for condition, value in filters:
        if value is not None:
            where.append(condition)
            params.append(value)


def _on_messages(where: list[str], params: list[Any], *, session_ids: tuple[str, ...] | None, role: str | None,
                 since: float | None, until: float | None, include_tools: bool) -> None:
    """Add the conditions of a search's filters on `m`, a message (the session's are the caller's)."""
    if session_ids is not None:
        # One session is `=`, not a one-element ANY: the planner then carries the id over to
        # the join on sessions and reads that row once, not once per message found.
        one = len(session_ids) == 1
        where.append("m.session_id = %s" if one else "m.session_id = ANY(%s)")
        params.append(session_ids[0] if one else list(session_ids))
    _filter(where, params, [("m.role = %s", role),
                            ("m.timestamp >= %s", since), ("m.timestamp < %s", until)])
    if role is None and not include_tools:
        where.append("m.role <> 'tool'")


# --- recall: a question in natural language (sessiondb.recall) -----------------------------

# How many messages each of a question's words is in, and how many there are: what bm25
# weighs a word by, and what decides which words are common (sessiondb.recall.rarer).
_COUNTS = """
SELECT (SELECT count(*) FROM messages WHERE state <> 'rewound'),
       array(SELECT (SELECT count(*) FROM messages AS d WHERE d.stems @@ plainto_tsquery('stems', w.word)
                     AND d.state <> 'rewound') FROM unnest(%s::text[]) WITH ORDINALITY AS w(word, i) ORDER BY i)
"""

# bm25 over the `stems` column (migration 0011), as FTS5 ranks the embedded store's stems
# index: each word of the question counts by how rare it is among the searchable messages
# (the same idf as FTS5's), how often its lexemes occur in the message, against the
# message's length in lexemes.
_RECALL = """
WITH lexemes AS MATERIALIZED (
    SELECT w.word, unnest(tsvector_to_array(to_tsvector('stems', w.word))) AS lexeme,
           greatest(ln((%s - w.df + 0.5) / (w.df + 0.5)), 1e-6) AS weight
    FROM unnest(%s::text[], %s::bigint[]) AS w(word, df)),
matches AS MATERIALIZED (
    SELECT m.id, m.timestamp, m.stems, length(m.stems) AS size FROM messages AS m
    JOIN sessions AS s ON s.id = m.session_id
    WHERE m.stems @@ ({either}) AND {where}),
counted AS (
    SELECT matches.id, matches.timestamp, matches.size, lexemes.word, lexemes.weight,
           sum(coalesce(array_length(u.positions, 1), 1)) AS tf
    FROM matches CROSS JOIN LATERAL unnest(matches.stems) AS u JOIN lexemes ON lexemes.lexeme = u.lexeme
    GROUP BY matches.id, matches.timestamp, matches.size, lexemes.word, lexemes.weight)
SELECT id, timestamp, sum(weight * tf * ({k1} + 1)
               / (tf + {k1} * (1 - {b} + {b} * size / greatest((SELECT avg(size) FROM matches), 1)))) AS score
FROM counted GROUP BY id, timestamp ORDER BY score DESC, id DESC LIMIT %s
"""


def recall(conn: psycopg.Connection, question: Recall, *, profile: str | None, source: str | None,
           user_id: str | None, session_ids: tuple[str, ...] | None, role: str | None, since: float | None,
           until: float | None, include_tools: bool, limit: int) -> list[SearchHit]:
    """The best `limit` messages for a question, best first: its words (any of them) over
    the stems, ranked by bm25, every match ranked; its CJK trigrams as a substring search
    whose bm25 is added; then the best share their scores with their neighbours and those
    written when the question says are favoured (sessiondb.recall), as in the embedded store;
    a question with a meaning is fused with the messages nearest it (`nearest`, recall.fuse)."""
    where: list[str] = ["m.state <> 'rewound'"]
    params: list[Any] = []
    _filter(where, params, [("coalesce(s.profile, 'main') = %s", profile), ("s.source = %s", source),
                            ("s.user_id = %s", user_id)])
    _on_messages(where, params, session_ids=session_ids, role=role, since=since, until=until,
                 include_tools=include_tools)
    scores: dict[int, float] = {}
    times: dict[int, float] = {}
    words = list(question.words)
    either = " || ".join("plainto_tsquery('stems', %s)" for _ in words)
    if words:
        messages, held = conn.execute(_COUNTS, (words,), prepare=False).fetchone()
        # A common word only adds to the score of a message the rarer ones match: it is
        # weighed in every match's bm25, but matches nothing by itself (sessiondb.recall).
        making = rarer(dict(zip(words, held)), messages)[0] if messages > COMMON_MESSAGES else words
        statement = _RECALL.format(either=" || ".join("plainto_tsquery('stems', %s)" for _ in making),
                                   where=" AND ".join(where), k1=_K1, b=_B)
        for mid, times[mid], score in conn.execute(statement, (messages, words, held, *making, *params, RANK_WINDOW),
                                                   prepare=False):
            scores[mid] = float(score)
    # CJK trigrams ranked by the trigram index; runs too short for it scanned, each match
    # worth SCAN_SCORE (sessiondb.recall).
    trigrams = tuple(Term(t, phrase=True) for t in question.trigrams if through_trigrams(t))
    short = tuple(Term(t, phrase=True) for t in question.trigrams if not through_trigrams(t))
    for terms, worth in ((trigrams, None), (short, SCAN_SCORE)):
        if not terms:
            continue
        substrings = Query(groups=(terms,), excluded=(), substring=True)
        for hit in search(conn, substrings, profile=profile, source=source, user_id=user_id, session_ids=session_ids,
                          role=role,
                          since=since, until=until, include_tools=include_tools, include_reasoning=False,
                          limit=RANK_WINDOW):
            scores[hit.message_id] = scores.get(hit.message_id, 0.0) + (hit.score if worth is None else worth)
            times[hit.message_id] = hit.timestamp
    near = {} if question.meaning is None else nearest(conn, question.meaning, where, params, times)
    if not scores and not near:
        return []
    sources = best(scores, SPREAD_FROM)
    # Neighbours within the session, as the filters on messages allow (the session's are met).
    beside: list[str] = ["m.state <> 'rewound'"]
    beside_params: list[Any] = []
    _on_messages(beside, beside_params, session_ids=session_ids, role=role, since=since, until=until,
                 include_tools=include_tools)
    condition = " AND ".join(beside)
    neighbours = {mid: (previous, following) for mid, previous, following in conn.execute(
        f"SELECT c.id, (SELECT max(m.id) FROM messages AS m WHERE m.session_id = c.session_id AND m.id < c.id "
        f"AND {condition}), (SELECT min(m.id) FROM messages AS m WHERE m.session_id = c.session_id "
        f"AND m.id > c.id AND {condition}) FROM messages AS c WHERE c.id = ANY(%s)",
        (*beside_params, *beside_params, [mid for mid, _ in sources]), prepare=False)}
    lexical = favour(spread(dict(sources), neighbours), times, question)
    ranked = best(fuse(lexical, near), limit)
    rows = {row[0]: row for row in conn.execute(
        f"SELECT {_HIT}, left({_TEXT}, {SNIPPET_SCAN + 1}) FROM messages AS m "
        f"JOIN sessions AS s ON s.id = m.session_id WHERE m.id = ANY(%s)", ([mid for mid, _ in ranked],))}
    texts = {mid: rows[mid][8] or "" for mid, _ in ranked}
    spans = {mid: snippet_window(text, question.needles, words=True) for mid, text in texts.items()}
    cut = dict(zip(texts, headlines(conn, either or "''::tsquery", words,
                                    [texts[mid][start:end] for mid, (start, end) in spans.items()], "stems")))
    return [_hit(rows[mid][:8], windowed(cut[mid], *spans[mid], len(texts[mid])) if cut[mid]
                 else like_snippet(texts[mid], question.needles), score, found_by(mid, lexical, near))
            for mid, score in ranked]


def nearest(conn: psycopg.Connection, meaning: bytes, where: list[str], params: list[Any],
            times: dict[int, float]) -> dict[int, float]:
    """The NEAREST messages to `meaning` (a unit vector) the filters keep, with their
    similarity (-1 to 1): pgvector's scan where the server has it, else one in SQL
    (vectors.py); their times go into `times`."""
    found = {}
    for mid, similarity, times[mid] in conn.execute(
            f"SELECT m.id, {vectors.similarity(conn)} AS similarity, m.timestamp FROM message_vectors AS v "
            f"JOIN messages AS m ON m.id = v.message_id JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY similarity DESC LIMIT %s",
            (array("f", meaning).tolist(), *params, NEAREST), prepare=False):
        found[mid] = float(similarity)
    return found


def _hit(row: tuple[Any, ...], snippet: str, score: float, found: str = "words") -> SearchHit:
    mid, sid, uid, role, timestamp, state, title, source = row
    return SearchHit(session_id=sid, message_id=mid, uid=uid, role=role, timestamp=timestamp,
                     snippet=from_stored(snippet), score=score + 0.0, state=state, session_title=title,
                     session_source=source, found_by=found)
