"""Where should the off-path search index live? The same store file, or its own file?

    .venv/bin/python bench/bench_index_placement.py [--n 3000] [--rounds 3]

Both variants take the index off the acknowledgement path the same way (a thread that,
every 50 ms, indexes the new messages in one transaction, contentless FTS5 with
sessiondb's tokenizer); they differ only in where that transaction commits:

- in-file: into the store file itself, so each batch takes the store's write lock (the
  appender waits for it) and commits at the store's durability (an fsync per batch);
- own file: into `<store>-search` with the store attached read-only, its own lock, at
  synchronous=NORMAL (no fsync; derived data, rebuilt if lost).

One writer appends n messages, one transaction each at synchronous=FULL (raw APSW, so only
the placement differs). Printed: appends/s of each and the ratio, per round and median.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import apsw

import bench_core

FTS = "CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(text, content='', contentless_delete=1, " \
      "tokenize='unicode61 remove_diacritics 2')"


def run(variant: str, n: int, bodies: list[str]) -> float:
    directory = Path(tempfile.mkdtemp(prefix="placement-"))
    store = directory / "state.db"
    writer = apsw.Connection(str(store))
    writer.execute("PRAGMA journal_mode=WAL").fetchall()
    writer.execute("PRAGMA synchronous=FULL")
    writer.execute("CREATE TABLE messages(id INTEGER PRIMARY KEY, content TEXT)")
    if variant == "in-file":
        index = apsw.Connection(str(store))
        index.execute("PRAGMA synchronous=FULL")
        index.execute(FTS)
        index.execute("CREATE TABLE IF NOT EXISTS mark(v INTEGER)")
        src = "main"
    else:
        index = apsw.Connection(str(directory / "state.db-search"))
        index.execute("PRAGMA journal_mode=WAL").fetchall()
        index.execute("PRAGMA synchronous=NORMAL")
        index.execute(FTS)
        index.execute("CREATE TABLE IF NOT EXISTS mark(v INTEGER)")
        index.execute("ATTACH ? AS store", (str(store),))
        src = "store"
    index.execute("INSERT INTO mark VALUES (0)")
    index.set_busy_timeout(10_000)
    writer.set_busy_timeout(10_000)
    done = threading.Event()

    def indexer() -> None:
        while not done.wait(0.05):
            index.execute("BEGIN IMMEDIATE" if variant == "in-file" else "BEGIN")
            index.execute("UPDATE main.mark SET v = v")  # own file: the index's lock only
            (mark,) = index.execute("SELECT v FROM main.mark").fetchone()
            rows = index.execute(f"SELECT id, content FROM {src}.messages WHERE id > ?", (mark,)).fetchall()
            index.executemany("INSERT INTO main.words(rowid, text) VALUES (?, ?)", rows)
            if rows:
                index.execute("UPDATE main.mark SET v = ?", (rows[-1][0],))
            index.execute("COMMIT")

    thread = threading.Thread(target=indexer)
    thread.start()
    started = time.perf_counter()
    for i in range(n):
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO messages(content) VALUES (?)", (bodies[i % len(bodies)],))
        writer.execute("COMMIT")
    rate = n / (time.perf_counter() - started)
    done.set()
    thread.join()
    index.close()
    writer.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "benchmarks-placement.txt")
    args = p.parse_args()
    bodies = bench_core.bodies(1000)
    ratios = []
    lines = [f"bench/bench_index_placement.py --n {args.n} --rounds {args.rounds}: one writer, one transaction "
             "per message at synchronous=FULL, an indexer batch every 50 ms"]
    for rnd in range(args.rounds):
        order = ["in-file", "own-file"] if rnd % 2 == 0 else ["own-file", "in-file"]
        rates = {v: run(v, args.n, bodies) for v in order}
        ratios.append(rates["own-file"] / rates["in-file"])
        lines.append(f"round {rnd + 1}: in-file {rates['in-file']:,.0f}/s, own file {rates['own-file']:,.0f}/s, "
                     f"own/in {ratios[-1]:.2f}x")
        print(lines[-1], flush=True)
    lines.append(f"median own file / in-file: {statistics.median(ratios):.2f}x")
    print(lines[-1])
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
