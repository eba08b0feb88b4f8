"""Append throughput of the embedded store beside the raw limit, measured in one run.

    make bench-core            (or: python bench/bench_core.py --messages 20000)

The raw limit is plain APSW with the store's pragmas (WAL, synchronous=FULL), one INSERT
and one COMMIT per message into a table with no index. Against it: sessiondb with one
writer, each append acknowledged before the next, and sessiondb with 8 threads appending
at once (group commit). Rounds alternate between the systems so that drift in the
machine's speed hits all of them alike; the median round is reported.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import apsw

import sessiondb

WORDS = (
    "the agent read the file and found that the test fails when the upload thread finishes "
    "after the assertion so it waits on the finaliser before checking the result and then "
    "runs the suite again to be sure nothing else depends on timing 東京 天気 予報"
).split()


def bodies(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        text = []
        while sum(len(w) + 1 for w in text) < 400:
            text.append(rng.choice(WORDS))
        out.append(" ".join(text)[:400])
    return out


def set_pragmas(conn: apsw.Connection) -> None:
    """The store's own durability settings. One statement per call: APSW runs the rest of a
    multi-statement string only as the rows of the first are read, and journal_mode
    returns a row."""
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("PRAGMA synchronous=FULL")


def raw_limit(directory: Path, texts: list[str]) -> float:
    conn = apsw.Connection(str(directory / "raw.db"))
    set_pragmas(conn)
    conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, ts REAL)")
    started = time.perf_counter()
    for text in texts:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO m(session_id, role, content, ts) VALUES (?, ?, ?, ?)", ("s", "user", text, time.time()))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return len(texts) / elapsed


def raw_with_indexes(directory: Path, texts: list[str]) -> float:
    """The raw limit with sessiondb's own schema: the same tables, indexes and search
    triggers, written by plain APSW (one INSERT and COMMIT per message)."""
    path = directory / "raw-indexed.db"
    with sessiondb.open_store(path) as store:
        sid = store.create_session("bench").id
    conn = apsw.Connection(str(path))
    set_pragmas(conn)
    started = time.perf_counter()
    for seq, text in enumerate(texts, 1):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO messages(session_id, uid, seq, role, content, timestamp) VALUES (?, ?, ?, 'user', ?, ?)",
            (sid, f"u{seq}", seq, text, time.time()),
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - started
    conn.close()
    return len(texts) / elapsed


def one_writer(directory: Path, texts: list[str]) -> float:
    with sessiondb.open_store(directory / "one.db") as store:
        sid = store.create_session("bench").id
        started = time.perf_counter()
        for text in texts:
            store.append(sid, {"role": "user", "content": text})
        elapsed = time.perf_counter() - started
    return len(texts) / elapsed


def threads(directory: Path, texts: list[str], count: int = 8) -> float:
    with sessiondb.open_store(directory / "threads.db") as store:
        sids = [store.create_session("bench").id for _ in range(count)]
        share = len(texts) // count

        def run(i: int) -> None:
            for text in texts[i * share:(i + 1) * share]:
                store.append(sids[i], {"role": "user", "content": text})

        workers = [threading.Thread(target=run, args=(i,)) for i in range(count)]
        started = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        elapsed = time.perf_counter() - started
    return share * count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = bodies(args.messages)
    results: dict[str, list[float]] = {"raw": [], "raw-indexed": [], "one": [], "eight": []}
    for round_ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="sessiondb-bench-") as tmp:
            d = Path(tmp)
            results["raw"].append(raw_limit(d, texts))
            results["raw-indexed"].append(raw_with_indexes(d, texts))
            results["one"].append(one_writer(d, texts))
            results["eight"].append(threads(d, texts))
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in results.items()), flush=True)
    raw, indexed, one, eight = (statistics.median(results[k]) for k in ("raw", "raw-indexed", "one", "eight"))
    print(f"\nappends of {args.messages:,} messages of ~400 bytes, durability full, median of {args.rounds} rounds")
    print(f"  raw limit (APSW, one commit per message, no index):   {raw:10,.0f} msg/s")
    print(f"  raw limit with sessiondb's schema and search indexes: {indexed:10,.0f} msg/s  ({indexed / raw:.2f}x raw)")
    print(f"  sessiondb, one writer:                                {one:10,.0f} msg/s  "
          f"({one / raw:.2f}x raw, target >= 0.70x; {one / indexed:.2f}x raw with the same indexes)")
    print(f"  sessiondb, 8 threads:                                 {eight:10,.0f} msg/s  "
          f"({eight / one:.2f}x one writer; target >= 4x)")
    print(f"SQLite {apsw.sqlite_lib_version()}, APSW {apsw.apsw_version()}")


if __name__ == "__main__":
    main()
