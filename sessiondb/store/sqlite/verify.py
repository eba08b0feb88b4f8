"""Verifying a SQLite store: what only the engine can check, around the checks over rows.

One read transaction (a consistent snapshot) walks the file, runs the checks over rows
(store/verify.py) and compares the search index with the rows; nothing is repaired here
(that is the doctor's work). What only SQLite can check:

- the file: SQLite's own integrity_check (pages, b-trees, indexes), and the search
  index's own file's (FTS5 structure); a damaged file leaves the rows to the doctor;
- the fencing tokens handed out (the counter in store_meta), for the lease check;
- search: the index (its own file, caught up by the caller to this snapshot) holds
  exactly the stored rows (every state: the state is joined in at query time) up to its
  mark, each row's current text matches itself in the word and stem indexes, and the
  trigram index holds exactly the rows with CJK text, each matching its CJK runs. Rows the
  store logged as changed after the index's mark are the index's next batch, not a problem.
"""

from __future__ import annotations

from typing import Callable

import apsw

from ...model import VerifyReport
from ...query import indexable_runs
from ..rows import Rows
from .index.schema import CJK, STEMS, TOKENIZERS, WORDS, text_sql
from .search import fts_string

def verify(conn: apsw.Connection, touched_to: int, rows: Rows,
           logical: Callable[[Rows, int, VerifyReport], None]) -> VerifyReport:
    """Check the file, the rows (`logical` on `rows`, this connection's) and the search
    index on one snapshot of the store (call inside a read transaction, with the search
    index attached as `idx` and caught up; `touched_to` is its mark in the store's log of
    changed ids)."""
    report = VerifyReport()
    _file(conn, report)
    if report.problems:
        # Reading a damaged b-tree raises; the rows are for the doctor to salvage first.
        report.notes.append("rows: not checked, the file itself is damaged (run `sessiondb doctor`)")
        return report
    tokens = int(conn.execute("SELECT value FROM store_meta WHERE key = 'compaction_token'").fetchone()[0])
    logical(rows, tokens, report)
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
        text, found = indexable_runs(text)  # as the indexer gives it
        for index, size in ((WORDS, words_size), (STEMS, stems_size)):
            if size is None:
                report.problems.append(f"search: message {mid} is missing from {index}")
            elif size != b"\x00" and not _matches(conn, index, mid, text):  # no tokens: matches nothing
                report.problems.append(f"search: {index} holds other text than message {mid} has")
        runs = "\n".join(found)
        if bool(runs) != bool(in_cjk):
            report.problems.append(f"search: message {mid} is {'missing from' if runs else 'wrongly in'} {CJK}")
        elif runs and not _matches(conn, CJK, mid, runs):
            report.problems.append(f"search: {CJK} holds other text than message {mid} has")


def _matches(conn: apsw.Connection, index: str, mid: int, text: str) -> bool:
    return conn.execute(f"SELECT 1 FROM idx.{index} WHERE {index} MATCH ? AND rowid = ?",
                        (fts_string(text), mid)).fetchone() is not None

