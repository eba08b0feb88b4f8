"""Run one workload against one system, in this process only, and print its figures as JSON.

    python -m peers.run --adapter hermes --mode default --workload one --db F --data D --n 2000

Started by bench/compare.py (PYTHONPATH=bench), once per system, workload and round, so
that no two SQLite libraries (APSW's and the standard module's) ever share a process.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

ROLES = ("user", "assistant")


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mib() -> float:
    """This process's peak RSS. VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec
    from the parent that forked us (the driver, holding the search corpus)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def disk_bytes(db: Path) -> int:
    """Every file of the store: the database and whatever lives beside it under its name
    (WAL, shared memory, journal, a search index's own files)."""
    return sum(p.stat().st_size for p in db.parent.glob(f"{db.name}*") if p.is_file())


def texts(args) -> list[str]:
    return json.loads(Path(args.data).read_text())


class Errors:
    def __init__(self) -> None:
        self.count = 0
        self.first: str | None = None
        self.lock = threading.Lock()

    def add(self, exc: BaseException) -> None:
        with self.lock:
            self.count += 1
            if self.first is None:
                self.first = f"{type(exc).__name__}: {exc}"[:300]


def w_probe(A, args) -> dict:
    store = A(args.db, args.mode)
    try:
        return store.info()
    finally:
        store.close()


def w_one(A, args) -> dict:
    bodies = texts(args)[: args.n]
    store = A(args.db, args.mode)
    sid = store.new_session("one writer")
    errors = Errors()
    started = time.perf_counter()
    for i, text in enumerate(bodies):
        try:
            store.append(sid, ROLES[i % 2], text)
        except Exception as exc:  # surfaced to the caller: counted, not hidden
            errors.add(exc)
    elapsed = time.perf_counter() - started
    store.close()
    return {"rate": (len(bodies) - errors.count) / elapsed, "errors": errors.count, "first_error": errors.first}


def w_threads(A, args) -> dict:
    count = args.workers
    bodies = texts(args)[: args.n]
    share = len(bodies) // count
    store = A(args.db, args.mode)
    sids = [store.new_session(f"thread {i}") for i in range(count)]
    errors = Errors()

    def run(i: int) -> None:
        for j, text in enumerate(bodies[i * share:(i + 1) * share]):
            try:
                store.append(sids[i], ROLES[j % 2], text)
            except Exception as exc:
                errors.add(exc)

    workers = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    started = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    elapsed = time.perf_counter() - started
    store.close()
    done = share * count - errors.count
    return {"rate": done / elapsed, "errors": errors.count, "first_error": errors.first}


def w_procs(A, args) -> dict:
    """`workers` processes of this same program append to their own sessions of one file,
    all released at the same instant; the rate counts acknowledged appends only."""
    store = A(args.db, args.mode)  # creates the schema before the writers start
    sids = [store.new_session(f"process {i}") for i in range(args.workers)]
    store.close()
    share = args.n // args.workers
    start_at = time.time() + 2.0
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "peers.run", "--adapter", args.adapter, "--mode", args.mode,
             "--workload", "proc-worker", "--db", args.db, "--data", args.data, "--n", str(share),
             "--sid", sid, "--start-at", repr(start_at)],
            stdout=subprocess.PIPE, text=True,
        )
        for sid in sids
    ]
    results = []
    for child in children:
        out, _ = child.communicate()
        try:
            results.append(json.loads(out.strip().splitlines()[-1]))
        except Exception:
            results.append({"ok": 0, "errors": share, "first_error": f"worker exited {child.returncode}",
                            "end": time.time()})
    done = sum(r.get("ok", 0) for r in results)
    errors = sum(r.get("errors", 0) for r in results)
    first = next((r.get("first_error") for r in results if r.get("first_error")), None)
    elapsed = max(r["end"] for r in results) - start_at
    return {"rate": done / elapsed, "errors": errors, "first_error": first}


def w_proc_worker(A, args) -> dict:
    bodies = texts(args)[: args.n]
    store = A(args.db, args.mode)
    errors = Errors()
    time.sleep(max(0.0, args.start_at - time.time()))
    for i, text in enumerate(bodies):
        try:
            store.append(args.sid, ROLES[i % 2], text)
        except Exception as exc:
            errors.add(exc)
    end = time.time()
    store.close()
    return {"ok": len(bodies) - errors.count, "errors": errors.count, "first_error": errors.first, "end": end}


def w_searchable(A, args) -> dict:
    """Acknowledgement to searchable under the one-writer load: a writer thread appends n
    messages, each with a unique word; a searcher keeps taking the newest acknowledged one
    and searching for it until found. Latency: from its acknowledgement to the search that
    returned it."""
    bodies = texts(args)[: args.n]
    store = A(args.db, args.mode)
    sid = store.new_session("searchable")
    acked: list[tuple[int, float]] = []
    done = threading.Event()

    def write() -> None:
        for i, text in enumerate(bodies):
            store.append(sid, ROLES[i % 2], f"{text} ackprobe{i}x")
            acked.append((i, time.perf_counter()))
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    latencies, last = [], -1
    while not done.is_set() or (acked and acked[-1][0] != last):
        if not acked or acked[-1][0] == last:
            time.sleep(0.001)
            continue
        i, at = acked[-1]
        while not store.search(f"ackprobe{i}x"):
            pass
        latencies.append((time.perf_counter() - at) * 1000)
        last = i
    writer.join()
    store.close()
    latencies.sort()
    return {"p50_ms": latencies[len(latencies) // 2], "p99_ms": latencies[min(len(latencies) - 1,
            int(len(latencies) * 0.99))], "probes": len(latencies)}


def w_build_long(A, args) -> dict:
    """One session of n messages through the system's bulk path; then a checkpoint and the
    bytes on disk per stored message."""
    bodies = texts(args)[: args.n]
    store = A(args.db, args.mode)
    sid = store.new_session("long")
    started = time.perf_counter()
    rows = [(ROLES[i % 2], t) for i, t in enumerate(bodies)]
    # A bulk path that replaces the session's rows (Hermes's replace_messages) takes them all at once.
    batch = len(rows) if getattr(store, "bulk_replaces", False) else args.batch
    for i in range(0, len(rows), batch):
        store.bulk(sid, rows[i:i + batch])
    took = time.perf_counter() - started
    store.checkpoint()
    store.close()
    size = disk_bytes(Path(args.db))
    return {"sid": sid, "build_s": took, "bytes": size, "bytes_per_message": size / len(bodies),
            "payload_bytes_per_message": sum(len(t.encode()) for t in bodies) / len(bodies)}


def w_resume(A, args) -> dict:
    """Load the long session in a fresh process: cold first load, then `repeat` more; the
    process's peak RSS (VmHWM) is read after the loads."""
    before = rss_mib()
    store = A(args.db, args.mode)
    opened = rss_mib()
    times = []
    n = 0
    for _ in range(args.repeat + 1):
        started = time.perf_counter()
        rows = store.load(args.sid)
        times.append((time.perf_counter() - started) * 1000)
        n = len(rows)
        del rows
    store.close()
    return {"cold_ms": times[0], "warm_ms": statistics.median(times[1:]), "messages": n,
            "rss_before_mib": before, "rss_open_mib": opened, "peak_rss_mib": peak_rss_mib()}


def w_build_search(A, args) -> dict:
    sessions = json.loads(Path(args.data).read_text())
    store = A(args.db, args.mode)
    started = time.perf_counter()
    total = 0
    for i, rows in enumerate(sessions):
        sid = store.new_session(f"search {i}")
        store.bulk(sid, [tuple(r) for r in rows])
        total += len(rows)
    took = time.perf_counter() - started
    store.checkpoint()
    store.close()
    return {"messages": total, "build_s": took, "bytes": disk_bytes(Path(args.db))}


def w_search(A, args) -> dict:
    queries = json.loads(args.queries)
    store = A(args.db, args.mode)
    every, per_query = [], {}
    for q in queries:
        hits = store.search(q)
        if hits is None:
            store.close()
            return {"na": "no full-text search"}
        times = []
        for _ in range(args.repeat):
            started = time.perf_counter()
            store.search(q)
            times.append((time.perf_counter() - started) * 1000)
        every += times
        per_query[q] = {"hits": len(hits), "median_ms": statistics.median(times)}
    store.close()
    every.sort()
    return {"p50_ms": every[len(every) // 2], "p99_ms": every[min(len(every) - 1, int(len(every) * 0.99))],
            "queries": per_query}


WORKLOADS = {
    "probe": w_probe, "one": w_one, "threads": w_threads, "procs": w_procs, "proc-worker": w_proc_worker,
    "searchable": w_searchable, "build-long": w_build_long, "resume": w_resume, "build-search": w_build_search, "search": w_search,
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--adapter", required=True)
    p.add_argument("--mode", default="default")
    p.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    p.add_argument("--db", default="")
    p.add_argument("--data", default="")
    p.add_argument("--n", type=int, default=0)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--sid", default="")
    p.add_argument("--start-at", type=float, default=0.0)
    p.add_argument("--queries", default="[]")
    args = p.parse_args()
    if args.db:
        os.environ.setdefault("HERMES_HOME", str(Path(args.db).parent / "hermes-home"))
    try:
        A = importlib.import_module(f"peers.{args.adapter}").Adapter
        result = WORKLOADS[args.workload](A, args)
    except Exception as exc:
        traceback.print_exc()
        result = {"na": f"{type(exc).__name__}: {exc}"[:300]}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
