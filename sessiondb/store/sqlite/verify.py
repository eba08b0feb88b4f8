"""Verifying a SQLite store: every invariant the write paths keep, checked against the rows.

One read transaction (a consistent snapshot) walks the file and the tables and reports
each broken invariant in words; nothing is repaired here (that is the doctor's work).
What is checked, and why each can be checked by query:

- the file: SQLite's own integrity_check (pages, b-trees, indexes), and the search
  index's own file's (FTS5 structure);
- identity: a uid is stored once along a compression lineage, not only once per session
  (a session's own uniqueness is its unique index; across rotations only the write
  paths keep it);
- counters: each session's message_count and tool_call_count equal its active rows;
- order: among a session's active rows, seq never falls as the id rises (but where a
  compaction kept messages verbatim after its summary, see _order);
- rotations: a session a rotation closed (ended with reason compression, continued by a
  compression child) holds no active row: one there is outside the live conversation
  (S-46);
- search: the index (its own file, caught up by the caller to this snapshot) holds
  exactly the stored rows (every state: the state is joined in at query time) up to its
  mark, each row's current text matches itself in the word and stem indexes, and the
  trigram index holds exactly the rows with CJK text, each matching its CJK runs. Rows the store logged
  as changed after the index's mark are the index's next batch, not a problem;
- leases: every fencing token was handed out (at most the counter), and the watermark
  is a message id the session has reached (one lease per session is the primary key);
- orphans: no message or usage row of a session that does not exist.
"""

from __future__ import annotations

import apsw

from ...model import COMPRESSION, MAX_HOPS, VerifyReport
from ...query import cjk_runs, indexable
from .index.schema import CJK, STEMS, TOKENIZERS, WORDS, text_sql
from .search import fts_string

# Pairs (session, one of its compression ancestors or itself), every hop bounded.
_UP = """
WITH RECURSIVE up(id, ancestor, relation, parent, depth) AS (
    SELECT id, id, parent_relation, parent_session_id, 0 FROM sessions
    UNION ALL
    SELECT up.id, s.id, s.parent_relation, s.parent_session_id, up.depth + 1
    FROM up JOIN sessions AS s ON s.id = up.parent
    WHERE up.relation = ?1 AND up.depth < ?2
)
"""

_TOOL_CALLS = "coalesce(sum(json_array_length(tool_calls)), 0)"


def verify(conn: apsw.Connection, touched_to: int) -> VerifyReport:
    """Check every invariant on one snapshot of the store (call inside a read transaction,
    with the search index attached as `idx` and caught up; `touched_to` is its mark in the
    store's log of changed ids)."""
    report = VerifyReport()
    _file(conn, report)
    if report.problems:
        # Reading a damaged b-tree raises; the rows are for the doctor to salvage first.
        report.notes.append("rows: not checked, the file itself is damaged (run `sessiondb doctor`)")
        return report
    for check in (_identity, _counters, _order, _rotated, _leases, _orphans):
        check(conn, report)
    _index(conn, report, touched_to)
    return report


def _file(conn: apsw.Connection, report: VerifyReport) -> None:
    # integrity_check has FTS5 check each index against the index structure it caches per
    # connection, and FTS5 re-reads that only when a query opens the index: on a pooled
    # connection other writes have passed, it would report damage that is not there.
    for name in TOKENIZERS:
        conn.execute(f"SELECT 1 FROM idx.{name} WHERE {name} MATCH 'verify' LIMIT 1").fetchall()
    # A page too damaged to walk raises instead (StoreCorrupt, like any read of it).
    for schema, label in (("main", "file"), ("idx", "search index file")):
        rows = [r[0] for r in conn.execute(f"PRAGMA {schema}.integrity_check")]
        if rows != ["ok"]:
            report.problems.extend(f"{label}: {r}" for r in rows)


def _identity(conn: apsw.Connection, report: VerifyReport) -> None:
    rows = conn.execute(
        _UP + "SELECT m.session_id, m.uid, o.session_id FROM messages AS m "
        "JOIN up ON up.id = m.session_id AND up.depth > 0 "
        "JOIN messages AS o ON o.session_id = up.ancestor AND o.uid = m.uid",
        (COMPRESSION, MAX_HOPS),
    ).fetchall()
    for sid, uid, earlier in rows:
        report.problems.append(f"identity: uid {uid!r} of session {sid} is also stored in its lineage, in {earlier}")
    report.checked["messages"] = conn.execute("SELECT count(*) FROM messages").fetchone()[0]


def _counters(conn: apsw.Connection, report: VerifyReport) -> None:
    rows = conn.execute(
        f"""
        SELECT s.id, s.message_count, s.tool_call_count, coalesce(a.n, 0), coalesce(a.calls, 0)
        FROM sessions AS s LEFT JOIN (
            SELECT session_id, count(*) AS n, {_TOOL_CALLS} AS calls FROM messages
            WHERE state = 'active' GROUP BY session_id
        ) AS a ON a.session_id = s.id
        WHERE s.message_count IS NOT coalesce(a.n, 0) OR s.tool_call_count IS NOT coalesce(a.calls, 0)
        """
    ).fetchall()
    for sid, count, calls, rows_n, rows_calls in rows:
        report.problems.append(
            f"counters: session {sid} says {count} messages and {calls} tool calls; "
            f"its active rows hold {rows_n} and {rows_calls}"
        )
    report.checked["sessions"] = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]


def _order(conn: apsw.Connection, report: VerifyReport) -> None:
    # Appends number each row one past the last, so seq is unique until a compaction: its
    # summary takes the seq of the newest row it replaces (and so do the rows it keeps
    # verbatim; in older stores they follow with the lower seq they had). A fall right after a
    # row whose seq another row of the session shares (or of the parent it was rotated
    # from) is such a head; any other fall is disorder.
    rows = conn.execute(
        "SELECT session_id, id, seq, before FROM (SELECT session_id, id, seq, lag(seq) OVER w AS before, "
        "lag(id) OVER w AS before_id FROM messages WHERE state = 'active' "
        "WINDOW w AS (PARTITION BY session_id ORDER BY id)) AS a "
        "WHERE seq < before AND NOT EXISTS (SELECT 1 FROM messages AS o "
        "WHERE o.seq = a.before AND o.id <> a.before_id AND (o.session_id = a.session_id OR o.session_id = "
        "(SELECT parent_session_id FROM sessions WHERE id = a.session_id AND parent_relation = ?)))",
        (COMPRESSION,),
    ).fetchall()
    for sid, mid, seq, before in rows:
        report.problems.append(f"order: in session {sid}, message {mid} has seq {seq} after a message with seq {before}")


def _rotated(conn: apsw.Connection, report: VerifyReport) -> None:
    # A session ended with reason compression and no compression child is its own tip
    # (an import from a tool whose compaction keeps the parent's transcript): its rows are read.
    rows = conn.execute(
        "SELECT s.id, min(c.id), (SELECT count(*) FROM messages AS m WHERE m.session_id = s.id "
        "AND m.state = 'active') AS n FROM sessions AS s "
        "JOIN sessions AS c ON c.parent_session_id = s.id AND c.parent_relation = ?1 "
        "WHERE s.end_reason = ?1 GROUP BY s.id HAVING n > 0",
        (COMPRESSION,),
    ).fetchall()
    for sid, child, n in rows:
        report.problems.append(f"rotations: session {sid} was closed by compression into {child} and still holds "
                               f"{n} active message(s), outside the live conversation: resume never reads them")


def _index(conn: apsw.Connection, report: VerifyReport, touched_to: int) -> None:
    (indexed_to,) = conn.execute("SELECT value FROM idx.state WHERE key = 'indexed_to'").fetchone()
    highest, logged = conn.execute(
        "SELECT (SELECT coalesce(max(id), 0) FROM messages), (SELECT coalesce(max(seq), 0) FROM search_touched)"
    ).fetchone()
    if indexed_to < highest or touched_to < logged:
        report.notes.append(f"search: the index could not be brought up to date; checked up to message "
                            f"{indexed_to} (the rest is its next batch)")
    settled = "m.id <= ?1 AND m.id NOT IN (SELECT id FROM search_touched WHERE seq > ?2)"
    marks = (indexed_to, touched_to)
    for name in TOKENIZERS:
        extra = conn.execute(
            f"SELECT d.id FROM idx.{name}_docsize AS d WHERE d.id <= ?1 AND d.id NOT IN "
            "(SELECT id FROM search_touched WHERE seq > ?2) AND d.id NOT IN (SELECT id FROM messages)", marks
        ).fetchall()
        report.problems.extend(f"search: {name} holds message {mid}, which is not stored" for (mid,) in extra)
        report.checked[f"search_{name}"] = conn.execute(f"SELECT count(*) FROM idx.{name}_docsize").fetchone()[0]
    rows = conn.execute(
        f"SELECT m.id, {text_sql('m')}, (SELECT sz FROM idx.{WORDS}_docsize WHERE id = m.id), "
        f"(SELECT sz FROM idx.{STEMS}_docsize WHERE id = m.id), "
        f"EXISTS (SELECT 1 FROM idx.{CJK}_docsize WHERE id = m.id) FROM messages AS m WHERE {settled}", marks
    ).fetchall()
    for mid, text, words_size, stems_size, in_cjk in rows:
        text = indexable(text)  # as the indexer gives it
        for index, size in ((WORDS, words_size), (STEMS, stems_size)):
            if size is None:
                report.problems.append(f"search: message {mid} is missing from {index}")
            elif size != b"\x00" and not _matches(conn, index, mid, text):  # no tokens: matches nothing
                report.problems.append(f"search: {index} holds other text than message {mid} has")
        runs = "\n".join(cjk_runs(text))
        if bool(runs) != bool(in_cjk):
            report.problems.append(f"search: message {mid} is {'missing from' if runs else 'wrongly in'} {CJK}")
        elif runs and not _matches(conn, CJK, mid, runs):
            report.problems.append(f"search: {CJK} holds other text than message {mid} has")


def _matches(conn: apsw.Connection, index: str, mid: int, text: str) -> bool:
    return conn.execute(f"SELECT 1 FROM idx.{index} WHERE {index} MATCH ? AND rowid = ?",
                        (fts_string(text), mid)).fetchone() is not None


def _leases(conn: apsw.Connection, report: VerifyReport) -> None:
    counter = int(conn.execute("SELECT value FROM store_meta WHERE key = 'compaction_token'").fetchone()[0])
    rows = conn.execute(
        "SELECT l.session_id, l.token, l.watermark, "
        "(SELECT coalesce(max(id), 0) FROM messages WHERE session_id = l.session_id) "
        "FROM compaction_leases AS l"
    ).fetchall()
    for sid, token, watermark, newest in rows:
        if token > counter:
            report.problems.append(f"leases: the lease on session {sid} has token {token}, "
                                   f"above the {counter} tokens handed out")
        if watermark > newest:
            report.problems.append(f"leases: the lease on session {sid} has watermark {watermark}, "
                                   f"above the session's newest message {newest}")
    report.checked["leases"] = len(rows)


def _orphans(conn: apsw.Connection, report: VerifyReport) -> None:
    for table in ("messages", "usage"):
        for sid, n in conn.execute(
            f"SELECT session_id, count(*) FROM {table} WHERE session_id NOT IN (SELECT id FROM sessions) "
            "GROUP BY session_id"
        ):
            report.problems.append(f"orphans: {n} {table} row(s) of session {sid}, which does not exist")
    report.checked["usage"] = conn.execute("SELECT count(*) FROM usage").fetchone()[0]
