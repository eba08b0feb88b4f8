"""Where a warm search goes: each `make bench` query over 200,000 messages, its time split
by statement (SQLite's own profile of each), and the ranking statement taken apart.

    .venv/bin/python bench/profile_search.py [--store DIR/store.db] [--repeat 20] [--out docs/benchmarks-search-profile.txt]

The store is built from make bench's search corpus (bench/compare.py) unless `--store`
names one already built (bench/search_rounds.py --keep leaves one). Per query: the median
search, and the median time of each part of it: the check of the log of changed rows, the
ranking statement, the page's rows, the snippets; the rest is the catch-up check, the
read transaction, parsing, checks and building the hits. Then the ranking statement is
run in parts on one connection, to show what the rank window costs: the matches newest
first, joined with their messages (the filters), and with bm25 computed, for the newest
RANK_WINDOW (1,000) matches.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import apsw

import sessiondb
from sessiondb.query import RANK_WINDOW, parse
from sessiondb.store.sqlite import search as search_module
from sessiondb.store.sqlite.search import _Plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402

KINDS = {"log": "SELECT 1 FROM search_touched", "rank": "SELECT id, score", "page": "SELECT m.id"}


class Timed:
    """A connection whose statements are timed (rows read included) by the kind they are."""

    def __init__(self, conn: apsw.Connection, spent: dict[str, float]) -> None:
        self.conn, self.spent = conn, spent

    def execute(self, sql: str, *args):
        started = time.perf_counter()
        rows = list(self.conn.execute(sql, *args))
        kind = next((k for k, start in KINDS.items() if sql.startswith(start)), "other")
        self.spent[kind] += (time.perf_counter() - started) * 1000
        return Rows(rows)


class Rows(list):
    def fetchone(self):
        return self[0] if self else None

    def fetchall(self):
        return list(self)


PARTS = {  # each one value per match, summed up in SQLite so that no row reaches Python
    "matches": "SELECT {i}.rowid AS x FROM idx.{i} WHERE {i} MATCH ? ORDER BY {i}.rowid DESC LIMIT ?",
    "+ messages": "SELECT m.id AS x FROM idx.{i} CROSS JOIN messages AS m ON m.id = {i}.rowid WHERE {i} MATCH ? "
                  "AND m.state <> 'rewound' AND m.role <> 'tool' ORDER BY {i}.rowid DESC LIMIT ?",
    "+ bm25": "SELECT bm25({i}) AS x FROM idx.{i} CROSS JOIN messages AS m ON m.id = {i}.rowid WHERE {i} MATCH ? "
              "AND m.state <> 'rewound' AND m.role <> 'tool' ORDER BY {i}.rowid DESC LIMIT ?",
}


def build(path: Path, messages: int) -> None:
    with sessiondb.open_store(path) as store:
        for i, rows in enumerate(compare.search_corpus(messages)):
            sid = store.create_session("bench", title=f"search {i}").id
            store.append(sid, [{"role": role, "content": text} for role, text in rows])
        store.search("x")  # the index caught up


def by_statement(store, repeat: int) -> list[str]:
    spent: dict[str, float] = defaultdict(float)
    search, snippets = search_module.search, search_module.snippets

    def timed_search(conn, *args, **kwargs):
        return search(Timed(conn, spent), *args, **kwargs)

    def timed_snippets(*args, **kwargs):
        started = time.perf_counter()
        try:
            return snippets(*args, **kwargs)
        finally:
            spent["snippets"] += (time.perf_counter() - started) * 1000

    search_module.search, search_module.snippets = timed_search, timed_snippets
    kinds = [*KINDS, "snippets"]
    lines = [f"{'query':<30}{'search':>9}" + "".join(f"{k:>10}" for k in kinds) + f"{'the rest':>10}"]
    try:
        for q in compare.SEARCH_QUERIES:
            store.search(q)
            totals, per = [], defaultdict(list)
            for _ in range(repeat):
                spent.clear()
                started = time.perf_counter()
                store.search(q)
                totals.append((time.perf_counter() - started) * 1000)
                for kind in kinds:
                    per[kind].append(spent[kind])
            total, row = statistics.median(totals), {k: statistics.median(per[k]) for k in kinds}
            lines.append(f"{q:<30}{total:>9.2f}" + "".join(f"{row[k]:>10.2f}" for k in kinds)
                         + f"{total - sum(row.values()):>10.2f}")
    finally:
        search_module.search, search_module.snippets = search, snippets
    return lines


def ranking_in_parts(path: Path, repeat: int) -> list[str]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    conn.execute("PRAGMA cache_size=-16000")
    conn.execute("ATTACH ? AS idx", (f"{path}-search",))
    conn.execute("PRAGMA idx.cache_size=-16000")
    lines = [f"{'query (newest ' + str(RANK_WINDOW) + ' matches)':<36}" + "".join(f"{k:>12}" for k in PARTS)]
    for q in compare.SEARCH_QUERIES:
        plan = _Plan(parse(q))
        if plan.match is None:
            continue
        cells = []
        for sql in PARTS.values():
            statement = f"SELECT count(*), sum(x) FROM ({sql.format(i=plan.index)})"
            conn.execute(statement, (plan.match, RANK_WINDOW)).fetchall()
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                conn.execute(statement, (plan.match, RANK_WINDOW)).fetchall()
                times.append((time.perf_counter() - started) * 1000)
            cells.append(statistics.median(times))
        lines.append(f"{q:<36}" + "".join(f"{c:>12.2f}" for c in cells))
    conn.close()
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--store", type=Path, help="a store built from the search corpus (else one is built)")
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--out", type=Path, default=compare.DOCS / "benchmarks-search-profile.txt")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = args.store or Path(d) / "state.db"
        if args.store is None:
            build(path, args.messages)
        with sessiondb.open_store(path) as store:
            stored = store.stats().messages
            lines = [f"Warm searches over {stored:,} messages, ms, median of {args.repeat} (bench/profile_search.py)",
                     *by_statement(store, args.repeat), "",
                     "The ranking statement in parts, ms: the matches newest first, joined with their messages "
                     "(filters), with bm25", *ranking_in_parts(path, args.repeat)]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
