"""What a forget costs on a file store, and what it does to appends running beside it (S-55).

    make bench-forget        (or: python bench/bench_forget.py --users 200 --messages 500)

A store of `--users` people, each with one conversation of `--messages` messages (~300
bytes each, searched once so the index holds them all). One person is forgotten while
another thread appends one message at a time to someone else's conversation (durability
full, each acknowledged before the next). Reported: the forget's CPU time (this process:
the writer and the scan run in it) and its wall time by phase (deletion, scrub, scan), the
bytes scanned and fragments looked for, and the appends' p50 and p99 beside those while
nothing else happens.
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

TEXT = ("the agent read the file and found that the test fails when the upload thread finishes after the "
        "assertion so it waits on the finaliser before checking the result and runs the suite again ")


def fill(store, users: int, messages: int) -> list[str]:
    ids = []
    for u in range(users):
        session = store.create_session("cli", user_id=f"user{u}")
        store.append(session.id, [{"role": "user", "content": f"user{u} note {i}: {TEXT}"} for i in range(messages)])
        ids.append(session.id)
    store.search("finaliser")  # the index catches up: a forget purges a full index
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--messages", type=int, default=500)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = sessiondb.open_store(location=Path(folder) / "state.db")
        ids = fill(store, options.users, options.messages)
        stop = threading.Event()
        quiet: list[float] = []
        runner = threading.Thread(target=lambda: quiet.extend(appends(store, ids[-1], stop)))
        runner.start()
        time.sleep(3)
        stop.set()
        runner.join()

        phases: dict[str, float] = {}
        backend = store._open()
        timed = {"scrub": type(backend).scrub, "scan": forgetting._scan}

        def timing(name, call):
            def run(*args, **kwargs):
                began = time.perf_counter()
                try:
                    return call(*args, **kwargs)
                finally:
                    phases[name] = time.perf_counter() - began
            return run

        type(backend).scrub = timing("scrub", timed["scrub"])
        forgetting._scan = timing("scan", timed["scan"])
        stop.clear()
        beside: list[float] = []
        runner = threading.Thread(target=lambda: beside.extend(appends(store, ids[-1], stop)))
        runner.start()
        cpu, wall = time.process_time(), time.perf_counter()
        receipt = store.forget(user_id="user0")
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        stop.set()
        runner.join()
        store.close()
    print(f"store: {options.users} people x {options.messages} messages; forgot {receipt.messages} messages")
    print(f"forget: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (with the appending thread's); "
          f"scrub {phases['scrub'] * 1000:.0f} ms, scan {phases['scan'] * 1000:.0f} ms "
          f"({receipt.scanned_bytes / 1e6:.1f} MB, {receipt.fragments} fragments), "
          f"deletion and the rest {(wall - phases['scrub'] - phases['scan']) * 1000:.0f} ms")
    print(f"receipt: {receipt.summary()}")
    print(f"appends alone:        {quantiles(quiet)}")
    print(f"appends beside forget: {quantiles(beside)}")


if __name__ == "__main__":
    main()
