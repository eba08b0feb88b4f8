"""SIGKILL at random moments: appending, compacting and checkpointing processes, killed.

Each round starts four appenders (append_worker.py, durability "full"), one compactor and
one checkpointer (maintenance_worker.py) on the same store. Every worker must report
`ready` (its store is open) before anything is killed; the appenders then start together,
and each process is killed with SIGKILL once it has reported its own random number of
operations (acknowledged or refused), so the kills land mid-work however loaded the
machine is, never before a worker has started. Acknowledgements are read from their
output. After each round the store is opened again (an unclean shutdown: the startup
probe runs) and must hold every acknowledged message exactly once, every acknowledged
summary, no gap in any appender's sequence (only the one append in flight may be stored
unacknowledged), be found by search (the killed processes' index batches caught up), and
pass the integrity checks (the index equal to one rebuilt from nothing). Rounds accumulate on one store, and the
tier fails unless it verified its minimum of acknowledged appends.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import sessiondb
from checks import assert_intact

HERE = Path(__file__).parent
APPENDERS = 4


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_until(proc: subprocess.Popen, operations: int) -> list[str]:
    """The lines `proc` prints until it has reported `operations` operations (or ended)."""
    lines, done = [], 0
    while done < operations:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        done += line.startswith(("ack ", "refused "))
    return lines


def acks(stdout: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("ack ")]


def check_round(path: Path, session_ids: list[str], appended: dict[str, list[str]], summaries: list[str],
                *, intact: bool = True) -> int:
    """Every acknowledged write of the round stored once, in order, and searchable; with
    `intact`, also the whole store checked (assert_intact: verify() and the index against
    one rebuilt from nothing, each a pass over everything stored so far)."""
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
    if intact:
        assert_intact(path)
    return len(rows)


def kill_rounds(tmp_path: Path, rounds: int, figures, seed: int, min_acks: int, intact_every: int = 1) -> None:
    """`rounds` rounds of killed writers on one store; the whole store is checked every
    `intact_every` rounds and after the last (damage that a round leaves stays in the file,
    so a later check still sees it; checking everything after each of hundreds of rounds
    makes the run quadratic in what it stores)."""
    rng = random.Random(seed)
    path = tmp_path / "killed.db"
    with sessiondb.open_store(path) as store:
        session_ids = [store.create_session("cli", session_id=f"k{n}").id for n in range(3)]
    sids = ",".join(session_ids)
    kills = acked_total = rounds_failed = checkpoints = 0
    summaries: list[str] = []
    failures: list[str] = []
    for r in range(rounds):
        appenders = [f"r{r}a{i}" for i in range(APPENDERS)]
        procs = {name: start([str(HERE / "append_worker.py"), str(path), name, "1000000", sids, "--gate"])
                 for name in appenders}
        procs[f"r{r}c"] = start([str(HERE / "maintenance_worker.py"), str(path), f"r{r}c", "compact", sids])
        procs[f"r{r}k"] = start([str(HERE / "maintenance_worker.py"), str(path), f"r{r}k", "checkpoint", sids])
        output = {name: proc.stdout.readline() for name, proc in procs.items()}  # `ready`: the store is open
        not_ready = [name for name, line in output.items() if line != "ready\n"]
        for name in appenders:
            procs[name].stdin.write("go\n")
            procs[name].stdin.flush()
        for name in rng.sample(sorted(procs), len(procs)):
            output[name] += "".join(run_until(procs[name], rng.randint(10, 30) if name in appenders else
                                              rng.randint(1, 3)))
            if procs[name].poll() is None:
                os.kill(procs[name].pid, signal.SIGKILL)
        appended: dict[str, list[str]] = {}
        for name, proc in procs.items():
            # Read on through the same buffered pipe (communicate() would skip what readline buffered).
            out, err = output[name] + proc.stdout.read(), proc.stderr.read()
            proc.stdin.close()
            proc.wait(60)
            if proc.returncode == -signal.SIGKILL and name not in not_ready:
                kills += 1
            else:
                failures.append(f"{name} ended with {proc.returncode} before it was killed "
                                f"(ready: {name not in not_ready}): {err[-500:]}")
            if name.endswith("c"):
                summaries += acks(out)
            elif name.endswith("k"):
                checkpoints += len(acks(out))
            else:
                appended[name] = acks(out)
        acked_total += sum(len(u) for u in appended.values())
        try:
            check_round(path, session_ids, appended, summaries,
                        intact=(r + 1) % intact_every == 0 or r == rounds - 1)
        except AssertionError as exc:
            rounds_failed += 1
            failures.append(f"round {r}: {exc}")
    figures.record(
        tried=kills, failed=rounds_failed, unit="SIGKILLs",
        detail=f"{rounds} rounds of {APPENDERS} appenders, 1 compactor, 1 checkpointer, each killed once ready and "
               f"after 10-30 appends (1-3 maintenance operations); {acked_total} acknowledged appends and "
               f"{len(summaries)} acknowledged compactions checked, the whole store every "
               f"{intact_every} round(s) and after the last; failed counts rounds whose check failed",
    )
    assert failures == [], "\n".join(failures[:10])
    assert acked_total >= min_acks, f"only {acked_total} acknowledged appends were verified (at least {min_acks})"


def test_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=17, figures=figures, seed=4, min_acks=1000)


@pytest.mark.long
def test_long_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=170, figures=figures, seed=5, min_acks=10_000, intact_every=10)
