"""Full-text search: the queries over the index kept in its own file (see index/).

What is indexed: each message's readable text (index/schema.py: `content`, or the text
parts of `parts`, which a parts message stores in `content` when it is validated; a
tool message's first 8,192 characters), whatever its state. The index
is brought up to date after the acknowledgement, in batches (index/indexer.py); a search
first catches it up to what the store held when the search began, so it finds every
acknowledged write from any process (read-your-writes), and it joins every hit against
`messages` for the state: rewound rows are never found, compacted ones are found and
marked, deleted ones are gone. Ids the store logged as deleted or changed after the
index's mark are left out of index hits (they are not what the index holds for them).

Queries: what a person types is parsed by sessiondb.query (never raising) and compiled
here into an FTS5 expression in which every term is an FTS5 string literal, passed as a
bound parameter; no SQL is ever built from user text.

- Words (the default): the `words` index, tokenizer unicode61 with case and diacritics
  folded (cafe finds café); phrases, prefixes, OR, NOT; ranked by bm25.
- Substrings (a query with CJK text, or substring=True): a term of three or more
  characters, all of scripts written without spaces, is matched through the `cjk` trigram
  index (which holds only each message's runs of such text; ranked by bm25). Any other
  substring term (Latin text, mixed text, or shorter than three characters) is a LIKE
  condition on the text, with `%`, `_` and `\\` escaped, both sides folded by
  query.fold (case and accents, as PostgreSQL's `search_fold`; a function of every
  connection, connect.py). A query whose terms are all LIKE terms scans messages newest
  first and stops at `limit` hits (scored 0).

Ranking: hits are ordered by bm25 (ties newest first), among the newest RANK_WINDOW
messages that match the query and its filters (query.RANK_WINDOW, the same on every
backend). Computing bm25 costs a lookup per matching row: it is most of a warm search.
The index holds rewound messages too (filtered at query time), which count in bm25's
document statistics.

Snippets: the index stores no text, so the returned hits' texts are read from `messages`
and cut by FTS5 itself with the same tokenizer (`snippets`, below), from a bounded
window around each text's first match (query.snippet_window): what a snippet costs does
not grow with the text.
"""

from __future__ import annotations

import threading
from typing import Any

import apsw

from ...model import SearchHit
from ...query import (
    ELLIPSIS, HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN, LIKE_SNIPPET_CONTEXT, RANK_WINDOW, Query, Term, fold, like_pattern,
    like_snippet, snippet_window, through_trigrams, windowed,
)
from ...recall import (
    COMMON_MESSAGES, NEAREST, SCAN_SCORE, SPREAD_FROM, Recall, best, favour, found_by, fuse, rarer, spread,
)
from ..sql import from_stored
from .index.matrix import CANDIDATES, Matrix, scored
from .index.schema import CJK, STEMS, THOUGHTS, TOKENIZERS, TOOL_TEXT_LIMIT, WORDS, text_sql

__all__ = ["TOOL_TEXT_LIMIT", "recall", "search"]

SNIPPET_TOKENS = {WORDS: 16, STEMS: 16, CJK: 40, THOUGHTS: 16}
#: A message row's indexed text, as SQL on the alias `m` (every query here reads it so).
_TEXT = text_sql("m")


# --- compiling a parsed query -----------------------------------------------------------


def fts_string(text: str) -> str:
    """`text` as an FTS5 string literal: every character literal, nothing is syntax."""
    return '"' + text.replace('"', '""') + '"'


def _fts_term(term: Term) -> str:
    return fts_string(term.text) + ("*" if term.prefix else "")


def _fts_group(group: tuple[Term, ...]) -> str:
    return "(" + " OR ".join(_fts_term(t) for t in group) + ")"


class _Plan:
    """A compiled query: which index to MATCH with what expression, plus LIKE conditions."""

    def __init__(self, query: Query) -> None:
        self.index = CJK if query.substring else WORDS
        self.like_sql: list[str] = []
        self.like_params: list[str] = []
        self.needles: list[str] = []  # substrings to highlight when FTS5 cannot
        indexed = (lambda term: True) if not query.substring else (lambda term: through_trigrams(term.text))
        matched: list[str] = []
        text = _TEXT
        # An ASCII text (as many bytes as characters) folds as LIKE already compares it:
        # only the others pay for a call of query.fold.
        folded = f"(CASE WHEN length(CAST({text} AS BLOB)) = length({text}) THEN {text} ELSE fold({text}) END)"
        for group in query.groups:
            if all(indexed(t) for t in group):
                matched.append(_fts_group(group))
            else:
                self.like_sql.append("(" + " OR ".join(f"{folded} LIKE ? ESCAPE '\\'" for _ in group) + ")")
                self.like_params += [like_pattern(fold(t.text)) for t in group]
                self.needles += [t.text for t in group]
        excluded: list[str] = []
        for term in query.excluded:
            if matched and indexed(term):
                excluded.append(_fts_term(term))
            else:
                self.like_sql.append(f"{folded} NOT LIKE ? ESCAPE '\\'")
                self.like_params.append(like_pattern(fold(term.text)))
        self.match: str | None = None
        if matched:
            self.match = " AND ".join(matched)
            if excluded:
                self.match = f"({self.match}) NOT ({' OR '.join(excluded)})"


# --- running a search -----------------------------------------------------------------


_HIT_COLUMNS = "m.id, m.session_id, m.uid, m.role, m.timestamp, m.state, s.title, s.source"


def search(
    conn: apsw.Connection,
    query: Query,
    *,
    profile: str | None,
    source: str | None,
    user_id: str | None,
    session_ids: tuple[str, ...] | None,
    role: str | None,
    since: float | None,
    until: float | None,
    include_tools: bool,
    include_reasoning: bool,
    limit: int,
    touched_to: int = 0,
) -> list[SearchHit]:
    """The best `limit` hits for a parsed query, best first (newest first for LIKE-only).

    Runs on a store connection with the index attached as `idx` and caught up (by the
    caller) to what the store held when the search began; `touched_to` is the index's mark
    in the store's log of deleted and changed ids. With include_reasoning, words match a
    message's reasoning too (the `thoughts` index), text and reasoning each judged whole."""
    if query.empty:
        return []
    plan = _Plan(query)
    where, params = _filters(profile=profile, source=source, user_id=user_id, session_ids=session_ids, role=role,
                             since=since, until=until, include_tools=include_tools)
    where += plan.like_sql
    params += plan.like_params

    if plan.match is None:
        sql = (
            f"SELECT {_HIT_COLUMNS}, {_TEXT} FROM messages AS m "
            f"CROSS JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.id DESC LIMIT ?"
        )
        rows = conn.execute(sql, (*params, limit))
        return [_hit(row[:8], like_snippet(row[8], plan.needles), 0.0) for row in rows]

    index = plan.index
    where, params = _untouched(conn, where, params, touched_to)
    # Rank within the newest RANK_WINDOW matches (see the module docstring), in one pass:
    # the matches are read newest first (FTS5 walks its rowids backwards, no sort), stop at
    # the window's end, and bm25 is computed as each is read. Only the page's rows then
    # read the rest of their columns, their session and their text. The sessions are
    # joined in the window only when a filter is on them (every message has its session).
    sessions_join = "CROSS JOIN sessions AS s ON s.id = m.session_id"
    needs_sessions = any(f is not None for f in (profile, source, user_id))
    thinking = include_reasoning and index == WORDS
    if thinking:  # a match of the text or of the reasoning, scored by the better
        found = (f"(SELECT rowid, min(score) AS score FROM (SELECT rowid, bm25({WORDS}) AS score FROM idx.{WORDS} "
                 f"WHERE {WORDS} MATCH ? UNION ALL SELECT rowid, bm25({THOUGHTS}) FROM idx.{THOUGHTS} "
                 f"WHERE {THOUGHTS} MATCH ?) GROUP BY rowid) AS f")
        ranked = conn.execute(
            f"SELECT id, score FROM (SELECT m.id AS id, f.score AS score FROM {found} "
            f"CROSS JOIN messages AS m ON m.id = f.rowid {sessions_join if needs_sessions else ''} "
            f"WHERE {' AND '.join(where)} ORDER BY f.rowid DESC LIMIT ?) ORDER BY score, id DESC LIMIT ?",
            (plan.match, plan.match, *params, RANK_WINDOW, limit),
        ).fetchall()
    else:
        ranked = conn.execute(
            f"SELECT id, score FROM (SELECT m.id AS id, bm25({index}) AS score FROM idx.{index} "
            f"CROSS JOIN messages AS m ON m.id = {index}.rowid {sessions_join if needs_sessions else ''} "
            f"WHERE {index} MATCH ? AND {' AND '.join(where)} ORDER BY {index}.rowid DESC LIMIT ?) "
            f"ORDER BY score, id DESC LIMIT ?",
            (plan.match, *params, RANK_WINDOW, limit),
        ).fetchall()
    if not ranked:
        return []
    page = {row[0]: row for row in conn.execute(
        f"SELECT {_HIT_COLUMNS}, {_TEXT} FROM messages AS m {sessions_join} "
        f"WHERE m.id IN ({', '.join('?' * len(ranked))})", [mid for mid, _ in ranked],
    )}
    texts = {mid: row[8] for mid, row in page.items()}
    spans = {mid: snippet_window(text, query.needles, words=not query.substring) for mid, text in texts.items()}
    cut = snippets(index, plan.match, {mid: texts[mid][start:end] for mid, (start, end) in spans.items()},
                   (HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE, ELLIPSIS), SNIPPET_TOKENS[index])
    shown = {mid: _snippet(cut.get(mid), texts[mid], *spans[mid]) for mid in page}
    if thinking and (elsewhere := [mid for mid in page if mid not in cut]):
        # Found in its reasoning, not its text: the snippet is cut from the reasoning.
        thoughts = dict(conn.execute(f"SELECT id, reasoning FROM messages WHERE reasoning IS NOT NULL AND "
                                     f"id IN ({', '.join('?' * len(elsewhere))})", elsewhere).fetchall())
        around = {mid: snippet_window(t, query.needles, words=True) for mid, t in thoughts.items()}
        marked = snippets(THOUGHTS, plan.match, {mid: thoughts[mid][a:b] for mid, (a, b) in around.items()},
                          (HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE, ELLIPSIS), SNIPPET_TOKENS[WORDS])
        shown.update({mid: windowed(snippet, *around[mid], len(thoughts[mid])) for mid, snippet in marked.items()})
    return [_hit(page[mid][:8], shown[mid], -score) for mid, score in ranked]


def _filters(*, profile: str | None, source: str | None, user_id: str | None, session_ids: tuple[str, ...] | None,
             role: str | None, since: float | None, until: float | None,
             include_tools: bool) -> tuple[list[str], list[Any]]:
    """The conditions (on `m`, a message, and `s`, its session) of a search's filters, and
    their values: the session's first, then the message's (_on_messages)."""
    where: list[str] = []
    params: list[Any] = []
    if profile is not None:
        where.append("coalesce(s.profile, 'main') = ?")
        params.append(profile)
    if source is not None:
        where.append("s.source = ?")
        params.append(source)
    if user_id is not None:
        where.append("s.user_id = ?")
        params.append(user_id)
    mine, values = _on_messages(session_ids=session_ids, role=role, since=since, until=until,
                                include_tools=include_tools)
    return where + mine, params + values


def _untouched(conn: apsw.Connection, where: list[str], params: list[Any], mark: int) -> tuple[list[str], list[Any]]:
    """The filters, and a row logged as deleted or changed after an index's `mark` left out:
    it is not what the index holds under its id (an id reused by a later row). The log past
    the mark is nearly always empty (the index was caught up first), and then the condition
    is left out rather than checked for every match."""
    if conn.execute("SELECT 1 FROM search_touched WHERE seq > ? LIMIT 1", (mark,)).fetchone():
        return [*where, "m.id NOT IN (SELECT id FROM search_touched WHERE seq > ?)"], [*params, mark]
    return where, params


def _on_messages(*, session_ids: tuple[str, ...] | None, role: str | None, since: float | None, until: float | None,
                 include_tools: bool) -> tuple[list[str], list[Any]]:
    where = ["m.state <> 'rewound'"]
    params: list[Any] = []
    if session_ids is not None:  # one session's, or its conversation's (at most a lineage's MAX_HOPS ids)
        where.append(f"m.session_id IN ({', '.join('?' * len(session_ids))})")
        params.extend(session_ids)
    if role is not None:
        where.append("m.role = ?")
        params.append(role)
    elif not include_tools:
        where.append("m.role <> 'tool'")
    if since is not None:
        where.append("m.timestamp >= ?")
        params.append(since)
    if until is not None:
        where.append("m.timestamp < ?")
        params.append(until)
    return where, params


# --- recall: a question in natural language (sessiondb.recall) -----------------------------


def recall(conn: apsw.Connection, question: Recall, *, profile: str | None, source: str | None,
           user_id: str | None, session_ids: tuple[str, ...] | None, role: str | None, since: float | None,
           until: float | None, include_tools: bool, limit: int, touched_to: int = 0, embedded_touched_to: int = 0,
           matrix: Matrix | None = None, key: tuple = ()) -> list[SearchHit]:
    """The best `limit` messages for a question, best first, read as `search` reads (the
    index attached as `idx`, caught up by the caller).

    Its words are OR'd over the `stems` index, its CJK trigrams over the `cjk` index. A
    message's score is the sum of its bm25 in each; every match is ranked, not only the
    newest: a question is asked of the whole memory, and its best answer may be its
    oldest message; in a large memory, those of its rarer words (sessiondb.recall.rarer).
    Then the best SPREAD_FROM share their scores with their neighbours and those written
    when the question says are favoured (sessiondb.recall); a question with a meaning is
    fused with the messages nearest it (`nearest`, recall.fuse), their vectors caught up
    by the caller to `embedded_touched_to`, held in `matrix` as of `key`."""
    kept, kept_params = _filters(profile=profile, source=source, user_id=user_id, session_ids=session_ids, role=role,
                                 since=since, until=until, include_tools=include_tools)
    where, params = _untouched(conn, kept, kept_params, touched_to)
    sessions_join = "CROSS JOIN sessions AS s ON s.id = m.session_id"
    needs_sessions = any(f is not None for f in (profile, source, user_id))
    matches = {STEMS: " OR ".join(map(fts_string, question.words)),
               CJK: " OR ".join(fts_string(t) for t in question.trigrams if through_trigrams(t))}
    times: dict[int, float] = {}
    found_in: dict[int, str] = {}
    narrowed = any(f is not None for f in (profile, source, user_id, session_ids, role, since, until))

    def bm25_of(index: str, match: str) -> dict[int, float]:
        """The best RANK_WINDOW matches of `match` the filters keep, by bm25 (negated)."""
        if narrowed:  # the filters first: they may leave few of the matches
            rows = conn.execute(
                f"SELECT m.id, bm25({index}) AS score, m.timestamp FROM idx.{index} "
                f"CROSS JOIN messages AS m ON m.id = {index}.rowid {sessions_join if needs_sessions else ''} "
                f"WHERE {index} MATCH ? AND {' AND '.join(where)} ORDER BY score LIMIT ?",
                (match, *params, RANK_WINDOW))
        else:
            rows = _best_kept(conn, index, match, " AND ".join(where), params)
        found: dict[int, float] = {}
        for mid, score, times[mid] in rows:
            found[mid] = -score
            found_in.setdefault(mid, index)
        return found

    # The product of the meaning with every vector runs on another thread while the words
    # are looked for (index/matrix.py); the exact scores of its candidates come after.
    candidates = None if question.meaning is None or matrix is None else matrix.candidates(
        conn, question.meaning, key)
    scores: dict[int, float] = {}
    rare, common = list(question.words), []
    if question.words and (messages := _messages(conn)) > COMMON_MESSAGES:
        rare, common = rarer(_counts(conn, question.words), messages)
    if rare:
        # The common words only add to the matches of the rarer ones (sessiondb.recall):
        # a message both find is scored by bm25 over all of them, one the rarer alone find
        # by theirs, which is the same sum with the common words absent.
        scores = bm25_of(STEMS, " OR ".join(map(fts_string, rare)))
        if common:
            scores.update(bm25_of(STEMS, f"({' OR '.join(map(fts_string, rare))}) AND "
                                         f"({' OR '.join(map(fts_string, common))})"))
    if matches[CJK]:
        for mid, score in bm25_of(CJK, matches[CJK]).items():
            scores[mid] = scores.get(mid, 0.0) + score
    scanned: dict[int, str] = {}  # the snippets of the matches of runs too short for the trigram index
    short = tuple(Term(t, phrase=True) for t in question.trigrams if not through_trigrams(t))
    if short:
        for hit in search(conn, Query(groups=(short,), excluded=(), substring=True), profile=profile, source=source,
                          user_id=user_id, session_ids=session_ids, role=role, since=since, until=until,
                          include_tools=include_tools, include_reasoning=False, limit=RANK_WINDOW, touched_to=touched_to):
            scores[hit.message_id] = scores.get(hit.message_id, 0.0) + SCAN_SCORE
            times[hit.message_id] = hit.timestamp
            scanned.setdefault(hit.message_id, hit.snippet)
    near = {} if candidates is None else nearest(
        conn, question.meaning, *_untouched(conn, kept, kept_params, embedded_touched_to),
        sessions_join if needs_sessions else "", times, candidates())
    if not scores and not near:
        return []
    sources = best(scores, SPREAD_FROM)
    # Neighbours within the session, as the filters on messages allow (the session's are met).
    message_where, message_params = _on_messages(session_ids=session_ids, role=role, since=since, until=until,
                                                 include_tools=include_tools)
    neighbours = {mid: (previous, following) for mid, previous, following in conn.execute(
        f"SELECT c.id, (SELECT max(m.id) FROM messages AS m WHERE m.session_id = c.session_id AND m.id < c.id "
        f"AND {' AND '.join(message_where)}), (SELECT min(m.id) FROM messages AS m "
        f"WHERE m.session_id = c.session_id AND m.id > c.id AND {' AND '.join(message_where)}) "
        f"FROM messages AS c WHERE c.id IN ({', '.join('?' * len(sources))})",
        (*message_params, *message_params, *(mid for mid, _ in sources)))}
    lexical = favour(spread(dict(sources), neighbours), times, question)
    ranked = best(fuse(lexical, near), limit)
    page = {row[0]: row for row in conn.execute(
        f"SELECT {_HIT_COLUMNS}, {_TEXT} FROM messages AS m {sessions_join} "
        f"WHERE m.id IN ({', '.join('?' * len(ranked))})", [mid for mid, _ in ranked],
    )}
    texts = {mid: row[8] for mid, row in page.items()}
    spans = {mid: snippet_window(text, question.needles, words=True) for mid, text in texts.items()}
    cut: dict[int, str] = {}
    for index, match in matches.items():
        mine = {mid: texts[mid][start:end] for mid, (start, end) in spans.items() if found_in.get(mid) == index}
        cut.update(snippets(index, match, mine, (HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE, ELLIPSIS), SNIPPET_TOKENS[index]))
    return [_hit(page[mid][:8], scanned[mid] if mid not in cut and mid in scanned
                 else _snippet(cut.get(mid), texts[mid], *spans[mid]), score, found_by(mid, lexical, near))
            for mid, score in ranked]


def nearest(conn: apsw.Connection, meaning: bytes, where: list[str], params: list[Any], sessions_join: str,
            times: dict[int, float], candidates: list[int]) -> dict[int, float]:
    """The NEAREST messages to `meaning` (a unit vector) the filters keep, with their
    similarity (the vectors' dot product, -1 to 1): the matrix's `candidates`
    (index/matrix.py) scored exactly; where the filters keep fewer than NEAREST of them,
    every vector they keep. Their times go into `times`."""
    read = (f"SELECT m.id, v.vector, m.timestamp FROM idx.vectors AS v CROSS JOIN messages AS m ON m.id = v.rowid "
            f"{sessions_join} WHERE {' AND '.join(where)}")
    found = scored(conn, meaning, f"{read} AND v.rowid IN ({', '.join('?' * len(candidates))})", [*params, *candidates])
    if len(found) < NEAREST and len(candidates) == CANDIDATES:
        found = scored(conn, meaning, read, params)
    times.update((mid, at) for mid, _, at in found)
    return dict(best({mid: similarity for mid, similarity, _ in found}, NEAREST))


def _best_kept(conn: apsw.Connection, index: str, match: str, kept: str, params: list[Any]) -> list[tuple]:
    """(id, bm25, time) of the best RANK_WINDOW matches that `kept` (the plain filters: not
    rewound, not a tool's) holds for, best first. Ranked in the index before a row is
    read from `messages`, then read in pages until the window is full: joining every match
    first costs more than its bm25 when a question's words match tens of thousands."""
    best: list[tuple] = []
    page = 2 * RANK_WINDOW
    offset = 0
    while True:
        rows = conn.execute(
            f"SELECT r.id, r.score, m.timestamp, {kept} FROM (SELECT rowid AS id, bm25({index}) AS score "
            f"FROM idx.{index} WHERE {index} MATCH ? ORDER BY score LIMIT ? OFFSET ?) AS r "
            f"LEFT JOIN messages AS m ON m.id = r.id ORDER BY r.score",
            (*params, match, page, offset)).fetchall()
        best += [row[:3] for row in rows if row[3]]
        if len(best) >= RANK_WINDOW or len(rows) < page:
            return best[:RANK_WINDOW]
        offset += page
        page *= 4


def _counts(conn: apsw.Connection, words: tuple[str, ...]) -> dict[str, int]:
    """How many messages the `stems` index holds each word in (read from its term list,
    the word stemmed as the index stems it; a word of several tokens counts none)."""
    tokens = _scratch().fts5_tokenizer("porter", TOKENIZERS[STEMS].split()[1:])
    counts = {}
    for word in words:
        stems = tokens(word.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None)
        row = conn.execute(f"SELECT doc FROM temp.{STEMS}_terms WHERE term = ?", (stems[0][2],)).fetchone() \
            if len(stems) == 1 else None
        counts[word] = row[0] if row else 0
    return counts


def _messages(conn: apsw.Connection) -> int:
    """About how many messages the store holds (its highest id: read from the table's end)."""
    return conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]


def _snippet(cut: str | None, text: str, start: int, end: int) -> str:
    """FTS5's snippet of text[start:end] marked where the window cut the text; the
    text's start when the window holds no match FTS5 finds."""
    return windowed(cut, start, end, len(text)) if cut else text[:2 * LIKE_SNIPPET_CONTEXT]


def _hit(row: tuple[Any, ...], snippet: str, score: float, found: str = "words") -> SearchHit:
    mid, sid, uid, role, timestamp, state, title, source = row
    return SearchHit(
        session_id=sid, message_id=mid, uid=uid, role=role, timestamp=timestamp,
        snippet=from_stored(snippet), score=score + 0.0, state=state, session_title=title, session_source=source,
        found_by=found,
    )


# --- snippets of the contentless index -----------------------------------------------
#
# Snippets for hits of the contentless index.
#
# The index keeps no copy of the text (it stays in `messages` only), so FTS5 cannot cut a
# snippet from it. The few hits a search returns are put into a small in-memory FTS5 table
# with the same tokenizer and matched again with the same expression, so the snippet (which
# words are highlighted, where it is cut) is exactly what FTS5 makes of an indexed text.
# One such connection per thread; each use is rolled back, leaving its tables empty.

_local = threading.local()


def _scratch() -> apsw.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = apsw.Connection(":memory:")
        for name, tokenizer in TOKENIZERS.items():
            conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, tokenize='{tokenizer}')")
        _local.conn = conn
    return conn


def snippets(index: str, match: str, texts: dict[int, str], marks: tuple[str, str, str], tokens: int) -> dict[int, str]:
    """The snippet of each text (by message id) for `match` on `index`'s tokenizer."""
    if not texts:
        return {}
    conn = _scratch()
    opening, closing, ellipsis = marks
    # Rolled back, not deleted: deleting from FTS5 tokenizes every text again to find its
    # entries, and rolling back an in-memory transaction costs next to nothing.
    conn.execute("BEGIN")
    try:
        conn.executemany(f"INSERT INTO {index}(rowid, text) VALUES (?, ?)", list(texts.items()))
        return dict(conn.execute(
            f"SELECT rowid, snippet({index}, 0, ?, ?, ?, ?) FROM {index} WHERE {index} MATCH ?",
            (opening, closing, ellipsis, tokens, match),
        ).fetchall())
    finally:
        conn.execute("ROLLBACK")
