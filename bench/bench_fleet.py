"""The fleet benchmark: writer processes appending to one PostgreSQL server (docs/fleet.md).

    python bench/bench_fleet.py [--messages 300] [--rounds 3] [--search-corpus 200000] [--peer-python PY]

Same run, same server (a fresh one from the machine's binaries, tests/pgserver.py, with
fsync and synchronous_commit on): for 1, 2, 4 and 8 writer processes, each appending its
own conversation one message at a time, the appends per second of all of them together
and the p99 latency of one append (the medians of --rounds rounds, in which the systems
take turns: on this shared machine one round of the raw loop moved between 1,240 and
3,261 appends/s within minutes), for

- raw: psycopg, one INSERT and one COMMIT per message into a table without any index:
  the server's own limit for durable single-row commits;
- sessiondb on PostgreSQL (this backend, every index and check on);
- OpenAI Agents' SQLAlchemySession on asyncpg (in its own venv: --peer-python);
- sessiondb on SQLite (one file on the same disk, the embedded default).

Then one writer again, the raw loop and sessiondb on PostgreSQL, with the writer and its
server process pinned to one core and to two (each twice): unpinned, the scheduler's
choice moves one writer's rate by up to half again. Then search: the p50 of sessiondb's
search on PostgreSQL over a store of 200,000 messages.
Prints the versions and the disk's fsync latency (pg_test_fsync) with the figures, and
writes them to bench/results/fleet.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import pgserver  # noqa: E402  (the suite's server, from the machine's binaries)

WRITERS = (1, 2, 4, 8)
PLACEMENTS = ("one core", "two cores")  # where one writer and its server process run
SYSTEMS = ("raw", "sessiondb-postgres", "sqlalchemy-asyncpg", "sessiondb-sqlite")
WORDS = ("kyoto temple garden market ramen station ticket hotel museum river bridge castle shrine "
         "tea lunch dinner train bus taxi map rain sun cloud budget plan day night morning evening "
         "agent tool search memory session message summary error retry deploy build test server").split()


# --- one writer process ------------------------------------------------------------------


def writer(system: str, target: str, name: str, count: int, start_at: float, placement: str = "free") -> dict:
    """Append `count` messages one at a time; each append's latency in seconds. With
    `placement` "one core" or "two cores", this process and its server process are pinned
    to the same core or to two (PLACEMENTS)."""
    text = lambda i: f"{name} says {' '.join(random.Random(i).choices(WORDS, k=12))}"  # noqa: E731
    latencies = []
    if system == "raw":
        import psycopg
        conn = psycopg.connect(target)
        pin(placement, conn.info.backend_pid)
        wait(start_at)
        for i in range(count):
            t = time.perf_counter()
            conn.execute("INSERT INTO raw_messages(session_id, role, content, created) VALUES (%s, %s, %s, %s)",
                         (name, "user", text(i), time.time()))
            conn.commit()
            latencies.append(time.perf_counter() - t)
    elif system.startswith("sessiondb"):
        import sessiondb
        options = {"schema": "bench_fleet"} if system == "sessiondb-postgres" else {}
        with sessiondb.open_store(target, **options) as store:
            sid = store.create_session("bench", title=None).id
            if placement != "free":  # a lone caller's one connection (tests/postgres/test_append_cost.py)
                with store.backend.pool.connection() as conn:
                    pin(placement, conn.info.backend_pid)
            wait(start_at)
            for i in range(count):
                t = time.perf_counter()
                store.append(sid, {"role": "user", "content": text(i)})
                latencies.append(time.perf_counter() - t)
    else:
        import asyncio
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        async def run() -> None:
            session = SQLAlchemySession.from_url(name, url=target, create_tables=True)
            await session.get_items()  # creates the tables and connects before the clock starts
            wait(start_at)
            for i in range(count):
                t = time.perf_counter()
                await session.add_items([{"role": "user", "content": text(i)}])
                latencies.append(time.perf_counter() - t)
        asyncio.run(run())
    return {"latencies": latencies, "started": started, "finished": time.time()}


def pin(placement: str, server_pid: int) -> None:
    if placement != "free":
        os.sched_setaffinity(0, {0})
        try:
            os.sched_setaffinity(server_pid, {0} if placement == "one core" else {1})
        except PermissionError:
            raise SystemExit("pinning the server's process takes root or CAP_SYS_NICE (placement n/a)") from None


def wait(start_at: float) -> None:
    global started
    time.sleep(max(0.0, start_at - time.time()))
    started = time.time()


started = 0.0  # when this writer's clock started (after the barrier)


# --- the driver ---------------------------------------------------------------------------


def run_round(python: str, system: str, target: str, processes: int, count: int, placement: str = "free") -> dict:
    start_at = time.time() + 8.0  # every writer connected and waiting before the clock starts
    procs = [subprocess.Popen([python, __file__, "--worker", system, target, f"w{os.getpid()}-{processes}-{k}",
                               str(count), repr(start_at), placement], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}) for k in range(processes)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=900)
        if p.returncode:
            return {"error": err.strip().splitlines()[-1] if err.strip() else f"exit {p.returncode}"}
        results.append(json.loads(out.splitlines()[-1]))
    latencies = sorted(x for r in results for x in r["latencies"])
    elapsed = max(r["finished"] for r in results) - min(r["started"] for r in results)
    return {"appends_per_s": round(len(latencies) / elapsed), "p99_ms": round(1000 * latencies[int(0.99 * len(latencies)) - 1], 2),
            "p50_ms": round(1000 * statistics.median(latencies), 2)}


def placements(url: str, count: int) -> dict:
    """One writer's appends/s with the writer and its server process on one core and on
    two, for the raw loop and sessiondb, each order twice. Unpinned, the scheduler picks,
    and the two differ by up to half again, in opposite directions: each exchange of the
    raw loop's three per message wakes a process on the other core, which costs this
    machine's virtual CPUs dearly, while sessiondb's larger work per message is slowed
    more by sharing one core's caches (docs/fleet.md)."""
    rates: dict[str, dict[str, list[int]]] = {}
    for _ in range(2):
        for placement in PLACEMENTS:
            for system in ("raw", "sessiondb-postgres"):
                figures = run_round(sys.executable, system, url, 1, count, placement)
                rates.setdefault(placement, {}).setdefault(system, []).append(figures.get("appends_per_s", 0))
    for placement, by_system in rates.items():
        ratios = [round(s / r, 2) for s, r in zip(by_system["sessiondb-postgres"], by_system["raw"]) if r]
        print(f"1 writer, {placement:9}: raw {by_system['raw']}/s, sessiondb {by_system['sessiondb-postgres']}/s, "
              f"ratio {ratios}", flush=True)
    return rates


def median_round(rounds: list[dict]) -> dict:
    """A system's figures over its rounds: the median of each, and every round's rate
    (a round that failed is reported as its error)."""
    ran = [r for r in rounds if "error" not in r]
    if not ran:
        return rounds[0]
    return {**{key: statistics.median(r[key] for r in ran) for key in ("appends_per_s", "p99_ms", "p50_ms")},
            "rounds_per_s": [r.get("appends_per_s") for r in rounds]}


def fsync_latency(directory: Path, bindir: Path) -> str:
    probe = subprocess.run([str(bindir / "pg_test_fsync"), "-s", "2", "-f", str(directory / "fsync.probe")],
                           capture_output=True, text=True)
    for line in probe.stdout.splitlines():
        if line.strip().startswith("fdatasync"):
            return " ".join(line.split()[1:])
    return "n/a"


def search_p50(url: str, corpus: int) -> dict:
    import sessiondb
    rng = random.Random(7)
    with sessiondb.open_store(url, schema="bench_search") as store:
        t = time.perf_counter()
        for s in range(corpus // 1000):
            sid = store.create_session("bench").id
            for chunk in range(0, 1000, 500):
                store.append(sid, [{"role": "user" if i % 2 else "assistant",
                                    "content": " ".join(rng.choices(WORDS, k=20)) + (" 東京の天気" if i % 97 == 0 else "")}
                                   for i in range(chunk, chunk + 500)])
        fill = time.perf_counter() - t
        store.optimize()  # ANALYZE, as autovacuum does on a live server: the planner needs word statistics
        size = store.stats().size_bytes
        queries = ["kyoto", "ramen station", '"tea lunch"', "deploy*", "retry -error", "castle OR shrine",
                   "東京の天", "budget plan night", "muse*", "summary"]
        timings = {q: median_ms(store, q) for q in queries}
        # Substrings of text other than CJK (substring=True) are a scan of what the filters
        # select, newest first: a common one stops early, a rare one reads every message.
        substrings = {"amen sta": median_ms(store, "amen sta", substring=True),
                      "zqx (no match)": median_ms(store, "zqx", substring=True),
                      "zqx in one session": median_ms(store, "zqx", substring=True, session_id=sid)}
        return {"messages": corpus, "fill_s": round(fill, 1), "bytes_per_message": round(size / corpus), "p50_ms": round(statistics.median(timings.values()), 2),
                "per_query_ms": timings, "other_substrings_ms": substrings}


def median_ms(store, query: str, **options) -> float:
    store.search(query, **options)  # warm
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        store.search(query, **options)
        runs.append(time.perf_counter() - t)
    return round(1000 * statistics.median(runs), 2)


def versions(url: str, peer_python: str | None) -> dict:
    import psycopg
    with psycopg.connect(url) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
    found = {"postgresql": server, "python": sys.version.split()[0], "psycopg": metadata.version("psycopg"),
             "psycopg_pool": metadata.version("psycopg-pool"), "sessiondb": metadata.version("sessiondb"),
             "cpus": os.cpu_count()}
    if peer_python:
        probe = subprocess.run([peer_python, "-c", "from importlib import metadata as m; print(' '.join("
                                "m.version(p) for p in ('openai-agents', 'sqlalchemy', 'asyncpg')))"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            found.update(zip(("openai-agents", "sqlalchemy", "asyncpg"), probe.stdout.split()))
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=300, help="appends per writer process")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per writer count, the systems taking turns")
    parser.add_argument("--search-corpus", type=int, default=200_000)
    parser.add_argument("--peer-python", default=None, help="a Python with openai-agents, sqlalchemy, asyncpg")
    args = parser.parse_args()
    server = pgserver.start_server()
    work = Path(tempfile.mkdtemp(prefix="sessiondb-bench-fleet-", dir="/var/tmp"))
    try:
        url = server.url()
        import psycopg
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE raw_messages (session_id text, role text, content text, created float8)")
        sqlite_file = str(work / "fleet.db")
        asyncpg_url = f"postgresql+asyncpg://postgres@/postgres?host={server.socket_dir}"
        targets = {"raw": url, "sessiondb-postgres": url, "sqlalchemy-asyncpg": asyncpg_url,
                   "sessiondb-sqlite": sqlite_file}
        report = {"versions": versions(url, args.peer_python), "fsync": fsync_latency(work, server.bindir),
                  "messages_per_writer": args.messages, "writes": {}}
        print(json.dumps({"versions": report["versions"], "fsync": report["fsync"]}), flush=True)
        for system in SYSTEMS:  # a warm-up creates each system's tables before writers race to
            python = args.peer_python if system == "sqlalchemy-asyncpg" else sys.executable
            if python is not None:
                run_round(python, system, targets[system], 1, 5)
        for processes in WRITERS:
            rounds: dict[str, list[dict]] = {}
            for _ in range(args.rounds):  # the systems take turns, round after round
                for system in SYSTEMS:
                    python = args.peer_python if system == "sqlalchemy-asyncpg" else sys.executable
                    if python is None:
                        figures = {"error": "no --peer-python with openai-agents (n/a)"}
                    else:
                        figures = run_round(python, system, targets[system], processes, args.messages)
                    rounds.setdefault(system, []).append(figures)
                    print(f"{processes} writer(s)  {system:20} {figures}", flush=True)
            for system, figures in rounds.items():
                report["writes"].setdefault(system, {})[processes] = median_round(figures)
            print(f"{processes} writer(s), medians of {args.rounds} rounds: "
                  + ", ".join(f"{system} {report['writes'][system][processes].get('appends_per_s', 'n/a')}/s"
                              for system in SYSTEMS), flush=True)
        if len(os.sched_getaffinity(0)) >= 2:
            report["one_writer_placement"] = placements(url, args.messages)
        report["search"] = search_p50(url, args.search_corpus)
        print(f"search over {args.search_corpus:,} messages: {report['search']}", flush=True)
        out = ROOT / "bench" / "results" / "fleet.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2))
        print(f"written to {out}")
    finally:
        server.destroy()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        system, target, name, count, start_at, placement = sys.argv[2:8]
        print(json.dumps(writer(system, target, name, int(count), float(start_at), placement)))
    else:
        main()
