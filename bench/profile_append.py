"""Where one writer's append goes, at durability full, one message each (the `make bench`
one-writer workload): a cProfile of n appends, top functions by own time, and, where
valgrind is installed, the CPU instructions one append costs beside the raw loops.

    .venv/bin/python bench/profile_append.py [--n 2000] [--out docs/benchmarks-profile.txt]

Instructions are counted by callgrind, which counts rather than times: the figures repeat
on a loaded machine. Each is the difference between runs of 1,200 and 200 appends, so
start-up cancels out. The indexer runs on its own thread beside the writer; "without the
indexer" shows the acknowledged path alone, and "the indexer alone" what one catch-up of
1,200 messages costs each (the batch sizes of a busy store). Counts with threads involved
move by a few percent with scheduling: compare runs made one at a time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_core

import sessiondb
from sessiondb.store.sqlite.index import indexer

COUNTED = {
    "raw": "raw loop: APSW, one INSERT and COMMIT per message, no index",
    "raw-indexed": "raw loop into sessiondb's schema (its b-tree indexes), plain APSW",
    "sessiondb-no-indexer": "sessiondb.append, the search indexer held off",
    "sessiondb": "sessiondb.append, the indexer catching up on its thread",
}
# The indexer alone, at the batch sizes a busy store gives it: appends of 100 messages with
# the indexer held off, then (the second) one catch-up of all of them; the difference is
# what indexing costs a message.
BATCHED = ("batched", "batched-then-indexed")
SMALL, LARGE = 200, 1200


def appends(directory: Path, texts: list[str], *, indexing: bool = True, batch: int = 1,
            catch_up: bool = False) -> None:
    if not indexing:
        indexer.Indexer.nudge = lambda self: None
        indexer.Indexer.settle = lambda self: None
    with sessiondb.open_store(directory / "state.db") as store:
        sid = store.create_session("bench").id
        messages = [{"role": ("user", "assistant")[i % 2], "content": text} for i, text in enumerate(texts)]
        for i in range(0, len(messages), batch):
            store.append(sid, messages[i] if batch == 1 else messages[i:i + batch])
        if catch_up:
            store._open()._file.indexer.catch_up()


def run_counted(system: str, n: int) -> None:
    """The body callgrind counts (a child process)."""
    texts = bench_core.bodies(LARGE)[:n]
    with tempfile.TemporaryDirectory() as d:
        work = {
            "raw": lambda: bench_core.raw_limit(Path(d), texts),
            "raw-indexed": lambda: bench_core.raw_with_indexes(Path(d), texts),
            "sessiondb-no-indexer": lambda: appends(Path(d), texts, indexing=False),
            "sessiondb": lambda: appends(Path(d), texts),
            "batched": lambda: appends(Path(d), texts, indexing=False, batch=100),
            "batched-then-indexed": lambda: appends(Path(d), texts, indexing=False, batch=100, catch_up=True),
        }[system]
        work()


def instructions(system: str, n: int) -> int:
    out = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
         "--count", system, str(n)], capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Collected : (\d+)", out).group(1))


def counted_section() -> list[str]:
    if shutil.which("valgrind") is None:
        return ["(valgrind is not installed: no instruction counts)"]
    lines = [f"CPU instructions per append (callgrind; runs of {LARGE:,} minus {SMALL:,} appends)"]
    per = {}
    for system, label in COUNTED.items():
        per[system] = (instructions(system, LARGE) - instructions(system, SMALL)) / (LARGE - SMALL)
        lines.append(f"  {per[system]:>10,.0f}  {label}  ({per[system] / per['raw']:.1f}x the raw loop)")
    written, indexed = (instructions(system, LARGE) for system in BATCHED)
    lines.append(f"  {(indexed - written) / LARGE:>10,.0f}  the indexer alone, per message of one "
                 f"{LARGE:,}-message catch-up")
    return lines


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "benchmarks-profile.txt")
    p.add_argument("--count", nargs=2, metavar=("SYSTEM", "N"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.count:
        run_counted(args.count[0], int(args.count[1]))
        return
    bodies = bench_core.bodies(args.n)
    with tempfile.TemporaryDirectory() as d, sessiondb.open_store(Path(d) / "state.db") as store:
        sid = store.create_session("bench").id
        profile = cProfile.Profile()
        profile.enable()
        for i, text in enumerate(bodies):
            store.append(sid, {"role": ("user", "assistant")[i % 2], "content": text})
        profile.disable()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    text = "\n".join(counted_section()) + "\n\n"
    text += f"cProfile of {args.n} one-message appends at durability full (bench/profile_append.py)\n" + out.getvalue()
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
