"""SIGKILL at random moments: appending, compacting and checkpointing processes, killed.

Each round starts four appenders (append_worker.py, durability "full"), one compactor and
one checkpointer (maintenance_worker.py) on the same store and kills every one of them
with SIGKILL at its own random moment. Acknowledgements are read from their output. After
each round the store is opened again (an unclean shutdown: the startup probe runs) and
must hold every acknowledged message exactly once, every acknowledged summary, no gap in
any appender's sequence (only the one append in flight may be stored unacknowledged),
be found by search (the killed processes' index batches caught up), and pass the
integrity checks (the index equal to one rebuilt from nothing). Rounds accumulate on one
store.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import sessiondb
from checks import assert_intact

HERE = Path(__file__).parent
APPENDERS = 4


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def acks(stdout: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("ack ")]


def check_round(path: Path, session_ids: list[str], appended: dict[str, list[str]], summaries: list[str]) -> int:
    with sessiondb.open_store(path) as store:
        rows = [m for sid in session_ids for m in store.transcript(sid, include_compacted=True)]
        # Acknowledged means searchable, from this process, after the writers were killed
        # mid-batch: the search catches the index up first.
        sample = [u for uids in appended.values() for u in uids[-5:]]
        unfound = [u for u in sample if u not in {h.uid for h in store.search(f'"{u}"', limit=50)}]
    assert unfound == [], f"acknowledged but not found by search: {unfound[:5]}"
    counts = Counter(m.uid for m in rows)
    twice = [u for u, n in counts.items() if n > 1]
    assert twice == [], f"stored twice: {twice[:5]}"
    missing = [u for u in summaries if u not in counts]
    assert missing == [], f"acknowledged summaries lost: {missing[:5]}"
    for writer, uids in appended.items():
        lost = [u for u in uids if u not in counts]
        assert lost == [], f"{writer}: acknowledged but not stored: {lost[:5]}"
        stored = sorted(int(u.rsplit("-", 1)[1]) for u in counts if u.rsplit("-", 1)[0] == writer)
        assert stored == list(range(len(stored))), f"{writer} has a gap"
        assert len(uids) <= len(stored) <= len(uids) + 1, f"{writer}: {len(stored)} stored for {len(uids)} acks"
    assert_intact(path)
    return len(rows)


def kill_rounds(tmp_path: Path, rounds: int, max_delay: float, figures, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "killed.db"
    with sessiondb.open_store(path) as store:
        session_ids = [store.create_session("cli", session_id=f"k{n}").id for n in range(3)]
    sids = ",".join(session_ids)
    kills = acked_total = rounds_failed = checkpoints = 0
    summaries: list[str] = []
    failures: list[str] = []
    for r in range(rounds):
        procs = {f"r{r}a{i}": start([str(HERE / "append_worker.py"), str(path), f"r{r}a{i}", "1000000", sids])
                 for i in range(APPENDERS)}
        procs[f"r{r}c"] = start([str(HERE / "maintenance_worker.py"), str(path), f"r{r}c", "compact", sids])
        procs[f"r{r}k"] = start([str(HERE / "maintenance_worker.py"), str(path), f"r{r}k", "checkpoint", sids])
        started = time.monotonic()
        schedule = sorted((rng.uniform(0.15, max_delay), name) for name in procs)
        for at, name in schedule:
            time.sleep(max(0.0, started + at - time.monotonic()))
            if procs[name].poll() is None:
                os.kill(procs[name].pid, signal.SIGKILL)
        appended: dict[str, list[str]] = {}
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=60)
            if proc.returncode == -signal.SIGKILL:
                kills += 1
            else:
                failures.append(f"{name} ended with {proc.returncode} before it was killed: {err[-500:]}")
            if name.endswith("c"):
                summaries += acks(out)
            elif name.endswith("k"):
                checkpoints += len(acks(out))
            elif not name.endswith("k"):
                appended[name] = acks(out)
        acked_total += sum(len(u) for u in appended.values())
        try:
            check_round(path, session_ids, appended, summaries)
        except AssertionError as exc:
            rounds_failed += 1
            failures.append(f"round {r}: {exc}")
    figures.record(
        tried=kills, failed=rounds_failed, unit="SIGKILLs",
        detail=f"{rounds} rounds of {APPENDERS} appenders, 1 compactor, 1 checkpointer, killed 0.15-{max_delay} s "
               f"after start; {acked_total} acknowledged appends and {len(summaries)} acknowledged compactions "
               f"checked; failed counts rounds whose check failed",
    )
    assert failures == [], "\n".join(failures[:10])


def test_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=17, max_delay=0.7, figures=figures, seed=4)


@pytest.mark.long
def test_long_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=170, max_delay=1.5, figures=figures, seed=5)
