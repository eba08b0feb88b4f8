"""What going through pgbouncer in transaction mode costs an append and a search (docs/fleet.md).

    .venv/bin/python bench/bench_pooler.py [--rounds 3] [--appends 1500] [--writers 8]

One server and one pgbouncer in front of it (tests/pgserver.py, tests/pgpooler.py: the
pooler with 4 server connections), each round alternating between a store opened on the
server's socket and one opened through the pooler, each on a schema of its own: a lone
writer appending one message at a time, then `--writers` threads of one process appending
to sessions of their own (appends batched together, as batching.py does), then searches of
a common word. Printed per round: appends/s, the CPU time per append of the client, the
server's processes and pgbouncer (as the kernel counts it, which the load of other work
moves far less than the rates), and the search p50; then the medians.
"""

from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import sessiondb  # noqa: E402
from pgpooler import start_pooler  # noqa: E402
from pgserver import start_server  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pids: list[int]) -> float:
    """Seconds of CPU the processes have used (user + system), with their children that have
    exited (a server's backends, once their connection closed), those gone since counting 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15])
    return total / TICK


def server_pids(postmaster: int) -> list[int]:
    """The postmaster and its live children (a backend still running is not in its
    children's total yet)."""
    found = [postmaster]
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            if int(Path(stat).read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                found.append(int(Path(stat).parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def run(url: str, schema: str, appends: int, writers: int, watched: dict[str, list[int]]) -> dict[str, float]:
    before = {name: cpu_of(pids()) for name, pids in watched.items()}
    client_before = time.process_time()
    with sessiondb.open_store(url, schema=schema) as store:
        sid = store.create_session("bench").id
        started = time.perf_counter()
        for n in range(appends):
            store.append(sid, [{"role": "user", "content": f"castle number {n} on the hill"}])
        lone = appends / (time.perf_counter() - started)
        sessions = [store.create_session("bench").id for _ in range(writers)]

        def write(session_id: str) -> None:
            for n in range(appends // writers):
                store.append(session_id, [{"role": "user", "content": f"shrine number {n} by the river"}])

        threads = [threading.Thread(target=write, args=(s,)) for s in sessions]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        together = (appends // writers) * writers / (time.perf_counter() - started)
        latencies = []
        for _ in range(30):
            started = time.perf_counter()
            store.search("castle")
            latencies.append(time.perf_counter() - started)
    total = appends + (appends // writers) * writers
    figures = {"lone appends/s": lone, f"{writers} threads appends/s": together,
               "search p50 ms": statistics.median(latencies) * 1000,
               "client CPU µs/append": (time.process_time() - client_before) / total * 1e6}
    for name, pids in watched.items():
        figures[f"{name} CPU µs/append"] = (cpu_of(pids()) - before[name]) / total * 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--appends", type=int, default=1500)
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    server = start_server()
    pooler = start_pooler(server, pool_size=4)
    try:
        postmaster = server.postmaster_pid()
        watched = {"server": lambda: server_pids(postmaster), "pgbouncer": lambda: [int(
            (server.root / f"pgbouncer-{pooler.port}.pid").read_text())]}
        results: dict[str, list[dict[str, float]]] = {"direct": [], "pgbouncer": []}
        for round_ in range(args.rounds):
            for name, url in (("direct", server.url()), ("pgbouncer", pooler.url()))[::1 if round_ % 2 == 0 else -1]:
                figures = run(url, f"bench_{name}_{round_}", args.appends, args.writers, watched)
                results[name].append(figures)
                print(f"round {round_ + 1} {name:9}", "  ".join(f"{k} {v:,.0f}" for k, v in figures.items()),
                      flush=True)
        print("medians:")
        for name, rounds in results.items():
            print(f"  {name:9}", "  ".join(f"{k} {statistics.median(r[k] for r in rounds):,.0f}" for k in rounds[0]))
    finally:
        pooler.stop()
        server.destroy()


if __name__ == "__main__":
    main()
