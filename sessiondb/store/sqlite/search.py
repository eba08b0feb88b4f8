"""Full-text search: the FTS5 indexes, the triggers that keep them true, and the queries.

What is indexed: each message's readable text, which is its `content`, or the text parts
of its `parts` JSON joined by newlines (a parts message is stored with that text in
`content`, derived in one pass when it is validated, so the SQL walk of the JSON, whose
cost grows with the square of the number of parts, runs only for rows stored before
that); a `tool` message contributes only its first
8,192 characters (tool output can be megabytes, and what matters is at the top). Rewound
messages are never indexed; compacted ones are, and hits say so.

The indexes, the view and the triggers are created by migration 0002_search, whose SQL
is frozen in its own module; this module keeps what runs against them. `text_sql` here
is the same expression as the view's, used by the queries that read text directly.

How the text is stored once: both indexes are FTS5 tables with *external content*, and
their content table is the view `message_search_text`, which derives the readable text
from the `messages` row on demand. Neither index stores a copy of the text; FTS5 reads
the view (by rowid) only to build snippets. Two indexes share the view:

- `messages_fts`, tokenizer `unicode61 remove_diacritics 2`: words, case and diacritics
  folded (cafe finds café); phrases, prefixes, bm25 ranking.
- `messages_trigram`, tokenizer `trigram remove_diacritics 1`: any substring of three or
  more characters, for CJK text (written without spaces) and substring search.

Why triggers: every write path (appends, imports, compaction moving rows between ids and
sessions, changing `state`, deleting sessions by cascade) keeps the indexes in the same
transaction without knowing they exist. External content requires that a row leave the
index with exactly the text it entered with; the triggers compute that text from the
old row with the same SQL expression the view uses, so an update or delete always
removes what was indexed. A state change between active and compacted does not touch the
index at all (the state is read from `messages` at query time); a change into or out of
`rewound` removes or adds the row. (An `INSERT OR REPLACE` on messages would delete rows
without firing delete triggers unless `recursive_triggers` is on: write paths must not
use it.) A contentless-delete table (`content=''`) was the alternative; it cannot build
snippets, so hits would need a second pass over the text in Python.

Queries: what a person types is parsed by sessiondb.query (never raising) and compiled
here into an FTS5 expression in which every term is an FTS5 string literal, passed as a
bound parameter; no SQL is ever built from user text. Substring mode (CJK text, or
substring=True) uses the trigram index; a term shorter than three characters cannot use
it and becomes a LIKE condition on the derived text with `%`, `_` and `\\` escaped. A query
whose terms are all that short scans messages newest first and stops at `limit` hits.

Ranking: hits are ordered by bm25 (ties newest first), among the newest 5,000 messages
that match the query and its filters. Computing bm25 costs a lookup per matching row, and
a common word can match most of a store (30,000 of 200,000 messages): ranking them all
takes 20 ms or more, ranking the newest 5,000 a few. Recency is the right tie-breaker for
an agent's memory; a more specific query reaches further back.
"""

from __future__ import annotations

import time
from typing import Any

import apsw

from ...model import SearchHit
from ...query import ELLIPSIS, HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN, Query, Term, like_pattern, like_snippet

TOOL_TEXT_LIMIT = 8192  # characters of a tool message's output that are indexed
TRIGRAM = 3
SNIPPET_TOKENS = {"messages_fts": 16, "messages_trigram": 40}
RANK_WINDOW = 5000  # hits are the best-ranked of at most this many newest matches


def text_sql(row: str) -> str:
    """The SQL expression of a message row's indexed text (`row` is an alias or new/old).

    The text parts of `parts` are walked with a recursive CTE and json_extract rather than
    json_each: FTS5 reads its content table with virtual tables disabled, so the view may
    not use a table-valued function.
    """
    def at(suffix: str = "") -> str:
        return f"'$[' || r.i || ']{suffix}'"

    parts = (
        f"(WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r "
        f"WHERE i + 1 < json_array_length({row}.parts)) "
        f"SELECT group_concat(CASE json_type({row}.parts, {at()}) "
        f"WHEN 'text' THEN json_extract({row}.parts, {at()}) "
        f"WHEN 'object' THEN iif(json_type({row}.parts, {at('.text')}) = 'text', "
        f"json_extract({row}.parts, {at('.text')}), NULL) END, char(10) ORDER BY r.i) FROM r)"
    )
    text = f"coalesce({row}.content, {parts}, '')"
    return f"(CASE WHEN {row}.role = 'tool' THEN substr({text}, 1, {TOOL_TEXT_LIMIT}) ELSE {text} END)"


INDEXES = ("messages_fts", "messages_trigram")
STALE_KEY = "search_stale"  # present in store_meta while the indexes need a rebuild
def rebuild(conn: apsw.Connection) -> None:
    """Rebuild both indexes from the messages (after index damage, S-16) and mark them live
    again."""
    for name in INDEXES:
        conn.execute(f"INSERT INTO {name}({name}) VALUES ('rebuild')")
    conn.execute("DELETE FROM store_meta WHERE key = ?", (STALE_KEY,))


def mark_stale(conn: apsw.Connection) -> None:
    """Index damage was found on a write: writes stop maintaining the indexes (and so
    succeed) until a rebuild, which runs when no other process holds the store."""
    conn.execute("INSERT OR IGNORE INTO store_meta(key, value) VALUES (?, ?)", (STALE_KEY, repr(time.time())))


def is_stale(conn: apsw.Connection) -> bool:
    return conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (STALE_KEY,)).fetchone() is not None


def check_integrity(conn: apsw.Connection) -> None:
    """Raise (an APSW corruption error) if an index disagrees with the messages it covers."""
    for name in INDEXES:
        conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")


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
        self.index = "messages_trigram" if query.substring else "messages_fts"
        self.like_sql: list[str] = []
        self.like_params: list[str] = []
        self.needles: list[str] = []  # substrings to highlight when FTS5 cannot
        matched: list[str] = []
        text = text_sql("m")
        for group in query.groups:
            if query.substring and any(len(t.text) < TRIGRAM for t in group):
                self.like_sql.append("(" + " OR ".join(f"{text} LIKE ? ESCAPE '\\'" for _ in group) + ")")
                self.like_params += [like_pattern(t.text) for t in group]
                self.needles += [t.text for t in group]
            else:
                matched.append(_fts_group(group))
        excluded: list[str] = []
        for term in query.excluded:
            if matched and not (query.substring and len(term.text) < TRIGRAM):
                excluded.append(_fts_term(term))
            else:
                self.like_sql.append(f"{text} NOT LIKE ? ESCAPE '\\'")
                self.like_params.append(like_pattern(term.text))
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
    session_id: str | None,
    role: str | None,
    since: float | None,
    until: float | None,
    include_tools: bool,
    limit: int,
) -> list[SearchHit]:
    """The best `limit` hits for a parsed query, best first (newest first for LIKE-only)."""
    if query.empty:
        return []
    plan = _Plan(query)
    where = ["m.state <> 'rewound'"]
    params: list[Any] = []
    if profile is not None:
        where.append("coalesce(s.profile, 'main') = ?")
        params.append(profile)
    if source is not None:
        where.append("s.source = ?")
        params.append(source)
    if session_id is not None:
        where.append("m.session_id = ?")
        params.append(session_id)
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
    where += plan.like_sql
    params += plan.like_params

    if plan.match is None:
        sql = (
            f"SELECT {_HIT_COLUMNS}, {text_sql('m')} FROM messages AS m "
            f"CROSS JOIN sessions AS s ON s.id = m.session_id "
            f"WHERE {' AND '.join(where)} ORDER BY m.id DESC LIMIT ?"
        )
        rows = conn.execute(sql, (*params, limit))
        return [_hit(row[:8], like_snippet(row[8], plan.needles), 0.0) for row in rows]

    index = plan.index
    sessions_join = "CROSS JOIN sessions AS s ON s.id = m.session_id"
    conditions = f"WHERE {index} MATCH ? AND {' AND '.join(where)}"
    params = [plan.match, *params]
    # Rank within the newest RANK_WINDOW matches: ranking costs a lookup per match, and a
    # common word can match most of the store (see the module docstring). Finding where the
    # window starts needs the sessions only when a filter is on them.
    needs_sessions = profile is not None or source is not None
    bound = conn.execute(
        f"SELECT {index}.rowid FROM {index} CROSS JOIN messages AS m ON m.id = {index}.rowid "
        f"{sessions_join if needs_sessions else ''} {conditions} "
        f"ORDER BY {index}.rowid DESC LIMIT 1 OFFSET ?",
        (*params, RANK_WINDOW - 1),
    ).fetchone()
    scope = f"FROM {index} CROSS JOIN messages AS m ON m.id = {index}.rowid {sessions_join} {conditions}"
    if bound is not None:
        scope += f" AND {index}.rowid >= ?"
        params.append(bound[0])
    sql = (
        f"SELECT {_HIT_COLUMNS}, snippet({index}, 0, ?, ?, ?, ?), bm25({index}) "
        f"{scope} ORDER BY bm25({index}), m.id DESC LIMIT ?"
    )
    snippet_args = (HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE, ELLIPSIS, SNIPPET_TOKENS[index])
    rows = conn.execute(sql, (*snippet_args, *params, limit))
    return [_hit(row[:8], row[8] or "", -row[9]) for row in rows]


def _hit(row: tuple[Any, ...], snippet: str, score: float) -> SearchHit:
    mid, sid, uid, role, timestamp, state, title, source = row
    return SearchHit(
        session_id=sid, message_id=mid, uid=uid, role=role, timestamp=timestamp,
        snippet=snippet, score=score + 0.0, state=state, session_title=title, session_source=source,
    )
