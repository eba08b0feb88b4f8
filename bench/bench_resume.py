"""Resume alone, side by side: sessiondb's `resume` against OpenAI Agents and Hermes.

    .venv/bin/python bench/bench_resume.py [--rounds 5] [--long 20000] [--before DIR]
                                           [--venvs DIR]

The `resume` workload of `make bench` (bench/compare.py) without the rest of it: one
session of `--long` messages built once per system through its bulk path, then loaded in
a fresh process per round (bench/peers/run.py: a cold load, then `--repeat` warm ones,
their median, and the process's peak RSS), rounds alternating the systems' order. With
`--before DIR` (a checkout of sessiondb, e.g. `git worktree add DIR main`) the same
store is also resumed by that code, so a change is measured against what it replaces in
one run. `--venvs DIR` is where `.venv-peers` and `.venv-openai` live (default: bench/).
`--profile FILE` also writes a cProfile of one warm sessiondb resume of that store (top
functions by own time; `make bench` shows docs/benchmarks-resume-profile.txt).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path

import apsw

import sessiondb
from sessiondb.store import lineage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_core  # noqa: E402
import compare  # noqa: E402

PEERS = ("hermes", "openai")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--long", type=int, default=20_000, help="messages in the resumed session")
    p.add_argument("--repeat", type=int, default=3, help="warm loads per process")
    p.add_argument("--before", type=Path, help="a sessiondb checkout to resume the same store with")
    p.add_argument("--venvs", type=Path, default=HERE, help="the folder holding .venv-peers and .venv-openai")
    p.add_argument("--work", type=Path, default=HERE / "results" / "resume")
    p.add_argument("--profile", type=Path, help="write a cProfile of one warm sessiondb resume here")
    args = p.parse_args()
    compare.INTERPRETERS.update(peers=args.venvs / ".venv-peers" / "bin" / "python",
                                openai=args.venvs / ".venv-openai" / "bin" / "python")
    args.work.mkdir(parents=True, exist_ok=True)
    bodies = args.work / "bodies.json"
    bodies.write_text(json.dumps(bench_core.bodies(args.long)))

    systems = {s[0]: s for s in compare.SYSTEMS if s[0] in ("sessiondb-full", *PEERS)}
    built: dict[str, tuple[Path, str]] = {}
    for key, s in systems.items():
        db = compare.fresh(args.work, f"long-{key}")
        r = compare.run(s, "build-long", args.work, db=db, data=bodies, n=args.long, batch=1000)
        print(f"build-long {key:<16} {json.dumps(r)}", flush=True)
        if "sid" in r:
            built[key] = (db, r["sid"])
    variants = [(key, key, None) for key in systems if key in built]
    if args.before is not None and "sessiondb-full" in built:
        variants.insert(1, ("sessiondb-before", "sessiondb-full", args.before.resolve()))

    results: dict[str, list[dict]] = {}
    for rnd in range(args.rounds):
        for name, key, root in (variants if rnd % 2 == 0 else variants[::-1]):
            db, sid = built[key]
            r = compare.run(systems[key], "resume", args.work, source=root, db=db, sid=sid, repeat=args.repeat)
            results.setdefault(name, []).append(r)
            print(f"round {rnd + 1} {name:<16} {json.dumps(r)}", flush=True)
    report(results)
    if args.profile and "sessiondb-full" in built:
        profile(*built["sessiondb-full"], args.profile)


def profile(db: Path, sid: str, out: Path) -> None:
    """cProfile of one warm resume, and beside it what SQLite and APSW alone take to hand
    over the same rows (cProfile counts that inside the rows' select and lineage.model_messages)."""
    with sessiondb.open_store(db) as store:
        store.resume(sid)  # warm: the profile is of a load like the benchmark's median
        p = cProfile.Profile()
        p.enable()
        n = len(store.resume(sid))
        p.disable()
        resumes = [timed(lambda: store.resume(sid)) for _ in range(5)]
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    sql = f"SELECT {', '.join(lineage.MODEL)} FROM messages WHERE session_id = ? AND state = 'active' ORDER BY id"
    rows = [timed(lambda: conn.execute(sql, (sid,)).fetchall()) for _ in range(5)]
    conn.close()
    text = io.StringIO()
    pstats.Stats(p, stream=text).sort_stats("tottime").print_stats(8)
    out.write_text(f"cProfile of one warm resume of {n:,} messages (bench/bench_resume.py --profile)\n"
                   f"median of 5 without the profiler: resume {statistics.median(resumes):.1f} ms, of which the "
                   f"rows alone (the same SELECT, fetchall on a bare APSW connection) "
                   f"{statistics.median(rows):.1f} ms\n" + text.getvalue())
    print(out.read_text())


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def report(results: dict[str, list[dict]]) -> None:
    def median(name: str, field: str) -> float | None:
        values = [r[field] for r in results.get(name, []) if field in r]
        return statistics.median(values) if values else None

    print(f"\n{'system':<18}{'warm ms':>9}{'cold ms':>9}{'open MiB':>10}{'peak MiB':>10}   (medians)")
    for name in results:
        cells = [median(name, f) for f in ("warm_ms", "cold_ms", "rss_open_mib", "peak_rss_mib")]
        print(f"{name:<18}" + "".join(f"{c:>9.1f} " if c is not None else f"{'n/a':>9} " for c in cells))
    ours, openai = median("sessiondb-full", "warm_ms"), median("openai", "warm_ms")
    if ours and openai:
        print(f"\nresume vs OpenAI get_items: {openai / ours:.2f}x faster (target >= 1.5x)")
    before = median("sessiondb-before", "warm_ms")
    if ours and before:
        print(f"resume vs --before: {before / ours:.2f}x faster")
    peak, hermes = median("sessiondb-full", "peak_rss_mib"), median("hermes", "peak_rss_mib")
    if peak and hermes:
        print(f"peak RSS {peak:.1f} MiB vs Hermes {hermes:.1f} MiB (target <= Hermes)")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"({time.time() - started:.0f} s)")
