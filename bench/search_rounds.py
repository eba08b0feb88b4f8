"""Search over 200,000 messages, sessiondb beside Hermes in one run: p50, p99 and each query.

    .venv/bin/python bench/search_rounds.py [--rounds 5] [--repeat 10] [--variant before=DIR]

The corpus, the queries and the workload are `make bench`'s (bench/compare.py: its
search corpus and SEARCH_QUERIES, `build-search` then `search` through bench/peers/run.py),
without the rest of it. Each system's store is built once; then the rounds run every
system's search workload in a fresh process, alternating the order from round to round so
that the shared machine's drift hits them alike. `--variant NAME=DIR` adds sessiondb as
found in another source tree (e.g. `git archive` of an earlier commit), searching the same
store as the installed sessiondb: a before/after measured in the same run.
Figures are medians over the rounds; per query, the median of the rounds' medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compare  # noqa: E402

SYSTEMS = {s[0]: s for s in compare.SYSTEMS}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--repeat", type=int, default=10, help="timed runs of each query per round")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=DIR",
                   help="sessiondb from another source tree, on the same store")
    p.add_argument("--work", type=Path, default=compare.HERE / "results" / "search-rounds")
    p.add_argument("--keep", action="store_true", help="keep the built stores and reuse them next time")
    p.add_argument("--peers", type=Path, default=compare.PEERS_PY, help="the interpreter with Hermes installed")
    args = p.parse_args()
    compare.INTERPRETERS["peers"] = args.peers
    began = time.time()
    log = lambda s: print(f"[{time.time() - began:6.0f}s] {s}", flush=True)  # noqa: E731

    work = args.work.resolve()  # the variants run in their own source trees
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / f"corpus-{args.messages}.json"
    if not corpus.exists():
        corpus.write_text(json.dumps(compare.search_corpus(args.messages)))
    # (label, system, source tree, store)
    runs = [("sessiondb", SYSTEMS["sessiondb-full"], None, work / f"sessiondb-{args.messages}" / "store.db"),
            ("hermes", SYSTEMS["hermes"], None, work / f"hermes-{args.messages}" / "store.db")]
    for spec in args.variant:
        name, _, tree = spec.partition("=")
        runs.append((name, SYSTEMS["sessiondb-full"], Path(tree).resolve(), runs[0][3]))
    for label, system, source, db in runs:
        if source is None and not (db.parent / "built").exists():
            shutil.rmtree(db.parent, ignore_errors=True)
            db.parent.mkdir(parents=True)
            built = compare.run(system, "build-search", work, db=db, data=corpus)
            log(f"build {label}: {built}")
            if "na" in built:
                raise SystemExit(f"{label}: {built['na']}")
            (db.parent / "built").touch()

    queries = json.dumps(compare.SEARCH_QUERIES)
    results: dict[str, list[dict]] = {label: [] for label, *_ in runs}
    for rnd in range(args.rounds):
        for label, system, source, db in (runs if rnd % 2 == 0 else runs[::-1]):
            r = compare.run(system, "search", work, source=source, db=db, queries=queries, repeat=args.repeat)
            if "na" in r:
                raise SystemExit(f"{label}: {r['na']}")
            results[label].append(r)
            log(f"round {rnd + 1} {label:<10} p50 {r['p50_ms']:7.2f} ms  p99 {r['p99_ms']:7.2f} ms")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    report(results)


def report(results: dict[str, list[dict]]) -> None:
    labels = list(results)
    med = statistics.median
    summary = {label: (med(r["p50_ms"] for r in rs), med(r["p99_ms"] for r in rs)) for label, rs in results.items()}
    hermes = summary["hermes"][0]
    print(f"\n{'system':<12}{'p50 ms':>10}{'p99 ms':>10}{'Hermes p50 / p50':>18}")
    for label, (p50, p99) in summary.items():
        print(f"{label:<12}{p50:>10.2f}{p99:>10.2f}{hermes / p50:>17.2f}x")
    print(f"\n{'query (median ms; hits)':<30}" + "".join(f"{label:>14}" for label in labels))
    for q in compare.SEARCH_QUERIES:
        cells = []
        for label in labels:
            per = [r["queries"][q] for r in results[label]]
            cells.append(f"{med(x['median_ms'] for x in per):8.2f} ({per[0]['hits']:>2})")
        print(f"{q:<30}" + "".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
