"""What removing costs on a file store, a forget (S-55) and a retention sweep, and what each
does to appends running beside it.

    make bench-removal        (or: python bench/bench_removal.py --users 200 --messages 500)

A store of `--users` people, each with one conversation of `--messages` messages (~300
bytes each, searched once so the index holds them all), half of them idle for a year.
While `--appenders` processes append one message at a time each to a conversation of their
own (durability full, each acknowledged before the next):

1. one person is forgotten: the forget's CPU time (this process's: the forget's writes go
   through its writer, and the scan runs in it) and its wall time by phase (deletion,
   scrub, scan), the bytes scanned and the fragments looked for;
2. the retention rules remove the idle half (`inactive_after`, a conversation per
   transaction): the sweep's wall and CPU time.

Reported beside each: the appends' p50 and p99 while it ran, and while nothing else did.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sessiondb
from sessiondb.store import forgetting

DAY = 86400.0
TEXT = ("the agent read the file and found that the test fails when the upload thread finishes after the "
        "assertion so it waits on the finaliser before checking the result and runs the suite again ")


def fill(path: Path, users: int, messages: int) -> None:
    """The conversations, every other one written a year ago (by the store's clock)."""
    year_ago = time.time() - 365 * DAY
    for u in range(users):
        clock = (lambda: year_ago) if u % 2 else time.time
        with sessiondb.open_store(location=path, clock=clock) as store:
            session = store.create_session("cli", user_id=f"user{u}")
            store.append(session.id, [{"role": "user", "content": f"user{u} note {i}: {TEXT}"}
                                      for i in range(messages)])


#: An appending process: its own conversation (written today, so no rule takes it), one
#: message at a time at durability full, from "go" to "stop" on stdin; then its latencies.
APPENDER = """
import json, sys, threading, time
import sessiondb
stop = threading.Event()
with sessiondb.open_store(location=sys.argv[1]) as store:
    sid = store.create_session("cli", user_id="appender").id
    print("ready", flush=True)
    sys.stdin.readline()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    took, i = [], 0
    while not stop.is_set():
        began = time.perf_counter()
        store.append(sid, {"role": "user", "content": f"beside {i}"})
        took.append(time.perf_counter() - began)
        i += 1
print(json.dumps(took), flush=True)
"""


def quantiles(took: list[float]) -> str:
    ms = sorted(t * 1000 for t in took)
    return f"p50 {statistics.median(ms):.1f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.1f} ms over {len(ms)} appends"


def beside(path: Path, processes: int, work):
    """`work()` while `processes` other processes append to the store: its result, wall and
    CPU seconds (this process's), and every append's time."""
    appenders = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    for proc in appenders:
        assert proc.stdout.readline() == "ready\n"
    for proc in appenders:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        result = work()
    finally:
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        took: list[float] = []
        for proc in appenders:
            out, _ = proc.communicate("stop\n")
            took += json.loads(out)
    return result, wall, cpu, took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--messages", type=int, default=500)
    parser.add_argument("--appenders", type=int, default=3, help="processes appending beside (default 3)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        fill(path, options.users, options.messages)
        store = sessiondb.open_store(location=path)
        store.search("finaliser")  # the index catches up: a forget purges a full index
        n = options.appenders
        _, _, _, quiet = beside(path, n, lambda: time.sleep(3))

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
        receipt, wall, cpu, during_forget = beside(path, n, lambda: store.forget(user_id="user2"))
        store.set_policy(inactive_after=30 * DAY)
        report, sweep_wall, sweep_cpu, during_sweep = beside(path, n, lambda: store.apply_policy(dry_run=False))
        store.close()
    print(f"store: {options.users} people x {options.messages} messages, every other one idle for a year")
    print(f"forget of {receipt.messages} messages: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU; "
          f"scrub {phases['scrub'] * 1000:.0f} ms, scan {phases['scan'] * 1000:.0f} ms "
          f"({receipt.scanned_bytes / 1e6:.1f} MB, {receipt.fragments} fragments), "
          f"deletion and the rest {(wall - phases['scrub'] - phases['scan']) * 1000:.0f} ms")
    print(f"  receipt: {receipt.summary()}")
    print(f"sweep: {report.summary()}: {sweep_wall * 1000:.0f} ms wall, {sweep_cpu * 1000:.0f} ms CPU "
          f"({sweep_wall / max(len(report.removed), 1) * 1000:.1f} ms per conversation)")
    print(f"{n} processes appending, each one message at a time:")
    print(f"appends alone:         {quantiles(quiet)}")
    print(f"appends beside forget: {quantiles(during_forget)}")
    print(f"appends beside sweep:  {quantiles(during_sweep)}")


if __name__ == "__main__":
    main()
