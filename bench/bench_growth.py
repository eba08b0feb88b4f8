"""How cost grows with what is stored: appends, acknowledgement to searchable, search and
bytes per message with 10,000, 100,000 and 1,000,000 messages already in the store.

    make bench-growth      (or: .venv/bin/python bench/bench_growth.py [--sizes 10000,100000])

For each size a store is filled through the bulk path (bench_search's generated
conversations, sessions of 100, durability normal for the fill only), its index caught up
and the WAL checkpointed; then, at durability full, the same workloads as `make bench`
run against it in fresh processes (bench/peers/run.py): one writer appending 2,000
messages to a new session, acknowledgement to searchable under that load, and the 12
search queries. Writes docs/benchmarks-growth.{json,md} and a chart. Target (issue 19):
appends do not slow by more than 1.5x from the smallest store to the largest.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_core  # noqa: E402
import bench_search  # noqa: E402
import compare  # noqa: E402

import sessiondb  # noqa: E402

SYSTEM = next(s for s in compare.SYSTEMS if s[0] == "sessiondb-full")


def fill(path: Path, total: int, seed: int = 5) -> float:
    rng = random.Random(seed)
    vocab = bench_search.vocabulary(rng)
    started = time.perf_counter()
    with sessiondb.open_store(path, durability="normal") as store:
        made = 0
        while made < total:
            topic = rng.choice(list(bench_search.TOPICS))
            sid = store.create_session("bench", title=None).id
            rows = [bench_search.message(rng, vocab, topic, rng.choice(["user", "assistant", "assistant", "tool"]))
                    for _ in range(min(100, total - made))]
            store.append(sid, [{"role": "user" if m["role"] == "user" else "assistant", "content": m["content"]}
                               for m in rows])
            made += len(rows)
        store.search("kyoto")  # the index caught up before the bytes are counted
    return time.perf_counter() - started


def measure(size: int, work: Path, bodies_file: Path) -> dict:
    db = compare.fresh(work, f"growth-{size}")
    build_s = fill(db, size)
    subprocess.run([sys.executable, "-c", "import apsw, sys; c = apsw.Connection(sys.argv[1]); "
                    "c.execute('PRAGMA wal_checkpoint(TRUNCATE)')", str(db)], check=True)
    files = sum(p.stat().st_size for p in db.parent.glob(f"{db.name}*") if p.is_file())
    queries = json.dumps(compare.SEARCH_QUERIES)
    one = compare.run(SYSTEM, "one", work, db=db, data=bodies_file, n=2000)
    searchable = compare.run(SYSTEM, "searchable", work, db=db, data=bodies_file, n=2000)
    search = compare.run(SYSTEM, "search", work, db=db, queries=queries, repeat=5)
    return {"messages": size, "build_s": round(build_s, 1), "bytes_per_message": files / size,
            "append_rate": one.get("rate"), "searchable_p50_ms": searchable.get("p50_ms"),
            "searchable_p99_ms": searchable.get("p99_ms"), "search_p50_ms": search.get("p50_ms"),
            "search_p99_ms": search.get("p99_ms")}


def render(results: dict, chart: bool) -> str:
    rows = results["sizes"]
    out = ["# How cost grows with the store", "",
           f"Measured {results['measured_at']} with `make bench-growth` (bench/bench_growth.py, "
           f"{results['elapsed_s'] / 60:.1f} minutes) on the same shared 2-core machine as "
           "[benchmarks.md](benchmarks.md): figures are noisy, one run per size.", "",
           "| messages stored | appends/s (one writer, full) | ack to searchable p50 / p99 ms | "
           "search p50 / p99 ms | bytes per message | fill s |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['messages']:,} | {r['append_rate'] or 0:,.0f} | {r['searchable_p50_ms'] or 0:.1f} / "
                   f"{r['searchable_p99_ms'] or 0:.1f} | {r['search_p50_ms'] or 0:.2f} / {r['search_p99_ms'] or 0:.2f} "
                   f"| {r['bytes_per_message']:,.0f} | {r['build_s']:.0f} |")
    t = results["target"]
    out += ["", f"Target: appends slow by at most 1.5x from {rows[0]['messages']:,} to {rows[-1]['messages']:,} "
            f"stored messages. Measured: {t['slowdown']:.2f}x ({'met' if t['met'] else '**missed**'})."]
    if chart:
        out += ["", "![growth](bench-growth.png)"]
    return "\n".join(out) + "\n"


CHART = """
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
r = json.load(open(sys.argv[1]))["sizes"]
x = [s["messages"] for s in r]
fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
for ax, (key, title) in zip(axes, [("append_rate", "appends/s"), ("searchable_p99_ms", "ack to searchable p99 ms"),
                                   ("search_p50_ms", "search p50 ms"), ("bytes_per_message", "bytes per message")]):
    ax.plot(x, [s[key] or 0 for s in r], marker="o")
    ax.set_xscale("log"); ax.set_title(title, fontsize=9); ax.set_xlabel("messages stored", fontsize=8)
    ax.set_ylim(bottom=0)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=90)
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--work", type=Path, default=HERE / "results" / "growth")
    p.add_argument("--docs", type=Path, default=compare.DOCS)
    args = p.parse_args()
    began = time.time()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    bodies_file = args.work / "bodies.json"
    bodies_file.write_text(json.dumps(bench_core.bodies(2000)))
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        rows.append(measure(size, args.work, bodies_file))
        print(json.dumps(rows[-1]), flush=True)
    first, last = rows[0]["append_rate"], rows[-1]["append_rate"]
    slowdown = first / last if first and last else float("inf")
    results = {"command": "make bench-growth", "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "elapsed_s": round(time.time() - began, 1), "sizes": rows,
               "target": {"name": "appends slow by at most 1.5x from the smallest store to the largest",
                          "slowdown": round(slowdown, 3), "target": "<= 1.5", "met": slowdown <= 1.5}}
    (args.docs / "benchmarks-growth.json").write_text(json.dumps(results, indent=2) + "\n")
    chart = compare.PEERS_PY.exists() and subprocess.run(
        [str(compare.PEERS_PY), "-c", CHART, str(args.docs / "benchmarks-growth.json"),
         str(args.docs / "bench-growth.png")]).returncode == 0
    (args.docs / "benchmarks-growth.md").write_text(render(results, chart))
    shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
