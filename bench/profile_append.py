"""Where one writer's append goes, at durability full, one message each (the `make bench`
one-writer workload): a cProfile of n appends, top functions by own time.

    .venv/bin/python bench/profile_append.py [--n 2000] [--out docs/benchmarks-profile.txt]

The same append in exact units (instructions, WAL pages, CPU per message of a batch) is
bench/exact.py's (`make bench-exact`).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import tempfile
from pathlib import Path

import bench_core

import sessiondb


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "benchmarks-profile.txt")
    args = p.parse_args()
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
    text = f"cProfile of {args.n} one-message appends at durability full (bench/profile_append.py)\n" + out.getvalue()
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
