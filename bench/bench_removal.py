"""What removing costs on a file store, a forget (S-55) and a retention sweep, and what each
does to appends running beside it.

    make bench-removal        (or: python bench/bench_removal.py --users 200 --messages 500)

A store of `--users` people, each with one conversation of `--messages` messages (~300
bytes each, searched once so the index holds them all), half of them idle for a year.
While another thread appends one message at a time to a conversation in use (durability
full, each acknowledged before the next):

1. one person is forgotten: the forget's CPU time (this process: the writer and the scan
   run in it) and its wall time by phase (deletion, scrub, scan), the bytes scanned and the
   fragments looked for;
2. the retention rules remove the idle half (`inactive_after`, a conversation per
   transaction): the sweep's wall and CPU time.

Reported beside each: the appends' p50 and p99 while it ran, and while nothing else did.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import sessiondb
from sessiondb.store import forgetting

DAY = 86400.0
TEXT = ("the agent read the file and found that the test fails when the upload thread finishes after the "
        "assertion so it waits on the finaliser before checking the result and runs the suite again ")


def fill(path: Path, users: int, messages: int) -> list[str]:
    """The conversations, every other one written a year ago (by the store's clock)."""
    ids = []
    year_ago = time.time() - 365 * DAY
    for u in range(users):
        clock = (lambda: year_ago) if u % 2 else time.time
        with sessiondb.open_store(location=path, clock=clock) as store:
            session = store.create_session("cli", user_id=f"user{u}")
            store.append(session.id, [{"role": "user", "content": f"user{u} note {i}: {TEXT}"}
                                      for i in range(messages)])
            ids.append(session.id)
    return ids


def appends(store, session_id: str, stop: threading.Event) -> list[float]:
    took = []
    i = 0
    while not stop.is_set():
        began = time.perf_counter()
        store.append(session_id, {"role": "user", "content": f"beside {i}"})
        took.append(time.perf_counter() - began)
        i += 1
    return took


def quantiles(took: list[float]) -> str:
    ms = sorted(t * 1000 for t in took)
    return f"p50 {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms over {len(ms)} appends"


def beside(store, session_id: str, work):
    """`work()` while a thread appends to `session_id`: its result, wall and CPU seconds, and the appends' times."""
    stop = threading.Event()
    took: list[float] = []
    runner = threading.Thread(target=lambda: took.extend(appends(store, session_id, stop)))
    runner.start()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        result = work()
    finally:
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        stop.set()
        runner.join()
    return result, wall, cpu, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--messages", type=int, default=500)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        ids = fill(path, options.users, options.messages)
        store = sessiondb.open_store(location=path)
        store.search("finaliser")  # the index catches up: a forget purges a full index
        live = ids[0]  # written today: no rule takes it
        _, _, _, quiet = beside(store, live, lambda: time.sleep(3))

        phases: dict[str, float] = {}
        backend = store._open()

        def timing(name, call):
            def run(*args, **kwargs):
                began = time.perf_counter()
                try:
                    return call(*args, **kwargs)
                finally:
                    phases[name] = time.perf_counter() - began
            return run

        type(backend).scrub = timing("scrub", type(backend).scrub)
        forgetting._scan = timing("scan", forgetting._scan)
        receipt, wall, cpu, during_forget = beside(store, live, lambda: store.forget(user_id="user2"))
        store.set_policy(inactive_after=30 * DAY)
        report, sweep_wall, sweep_cpu, during_sweep = beside(store, live,
                                                             lambda: store.apply_policy(dry_run=False))
        store.close()
    print(f"store: {options.users} people x {options.messages} messages, every other one idle for a year")
    print(f"forget of {receipt.messages} messages: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (with the "
          f"appending thread's); scrub {phases['scrub'] * 1000:.0f} ms, scan {phases['scan'] * 1000:.0f} ms "
          f"({receipt.scanned_bytes / 1e6:.1f} MB, {receipt.fragments} fragments), "
          f"deletion and the rest {(wall - phases['scrub'] - phases['scan']) * 1000:.0f} ms")
    print(f"  receipt: {receipt.summary()}")
    print(f"sweep: {report.summary()}: {sweep_wall * 1000:.0f} ms wall, {sweep_cpu * 1000:.0f} ms CPU "
          f"({sweep_wall / max(len(report.removed), 1) * 1000:.1f} ms per conversation)")
    print(f"appends alone:         {quantiles(quiet)}")
    print(f"appends beside forget: {quantiles(during_forget)}")
    print(f"appends beside sweep:  {quantiles(during_sweep)}")


if __name__ == "__main__":
    main()
