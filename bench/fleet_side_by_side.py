"""Two checkouts of sessiondb side by side on the fleet benchmark's appends (docs/fleet.md).

    .venv/bin/python bench/fleet_side_by_side.py BEFORE AFTER PEER_PYTHON [--rounds 3] [--messages 200]

BEFORE and AFTER are two source trees (`git archive REV | tar -x -C DIR`). Each gets a
server of its own, started alike (tests/pgserver.py), since a store migrated by the newer
one is refused by the older; for 1 and 8 writer processes, rounds alternate between
them, each round the raw loop then sessiondb on PostgreSQL (bench_fleet.run_round of that
tree, whose writers import that tree's sessiondb), and at 8 writers OpenAI's
SQLAlchemySession once per round (PEER_PYTHON: a Python with openai-agents). On a shared
machine the rates move by 2x within minutes, so what it prints are each round's ratios
to the raw loop and to SQLAlchemySession of the same round, and their medians.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

import psycopg

WRITERS = (1, 8)


def fleet_bench(tree: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, Path(tree) / "bench" / "bench_fleet.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("peer_python")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=200)
    args = parser.parse_args()
    benches = {"before": fleet_bench(args.before, "fleet_before"), "after": fleet_bench(args.after, "fleet_after")}
    servers = {tree: bench.pgserver.start_server() for tree, bench in benches.items()}
    try:
        for server in servers.values():
            with psycopg.connect(server.url(), autocommit=True) as conn:
                conn.execute("CREATE TABLE raw_messages (session_id text, role text, content text, created float8)")
        peer_url = f"postgresql+asyncpg://postgres@/postgres?host={servers['after'].socket_dir}"
        for tree, bench in benches.items():  # a warm-up creates the tables before the clock
            bench.run_round(sys.executable, "sessiondb-postgres", servers[tree].url(), 1, 5)
        benches["after"].run_round(args.peer_python, "sqlalchemy-asyncpg", peer_url, 1, 5)
        rates: dict[tuple[int, str], list[int]] = {}
        for processes in WRITERS:
            for _ in range(args.rounds):
                for tree, bench in benches.items():
                    for system in ("raw", "sessiondb-postgres"):
                        figures = bench.run_round(sys.executable, system, servers[tree].url(), processes, args.messages)
                        rates.setdefault((processes, f"{tree} {system}"), []).append(figures["appends_per_s"])
                        print(f"{processes} writer(s)  {tree:6} {system:20} {figures}", flush=True)
                if processes == 8:
                    figures = benches["after"].run_round(args.peer_python, "sqlalchemy-asyncpg", peer_url, processes,
                                                         args.messages)
                    rates.setdefault((processes, "sqlalchemy"), []).append(figures["appends_per_s"])
                    print(f"{processes} writer(s)  SQLAlchemySession           {figures}", flush=True)
        for processes in WRITERS:
            for tree in benches:
                ours = rates[(processes, f"{tree} sessiondb-postgres")]
                versus = [("raw loop", rates[(processes, f"{tree} raw")])]
                if processes == 8:
                    versus.append(("SQLAlchemySession", rates[(processes, "sqlalchemy")]))
                for name, theirs in versus:
                    ratios = [a / b for a, b in zip(ours, theirs)]
                    print(f"{processes} writer(s)  {tree:6} sessiondb / {name}: median {statistics.median(ratios):.2f}x, "
                          f"rounds {[round(r, 2) for r in ratios]}")
    finally:
        for server in servers.values():
            server.destroy()


if __name__ == "__main__":
    main()
