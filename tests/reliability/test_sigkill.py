"""SIGKILL at random moments: appending, compacting and checkpointing processes, killed.

Each round starts four appenders (append_worker.py, durability "full", batches of two), one
compactor and one checkpointer (maintenance_worker.py) on the same store. Every worker must
report `ready` (its store is open) before anything is killed; the appenders then start
together, and each process is killed with SIGKILL once it has reported its own random
number of operations (acknowledged or refused), so the kills land mid-work however loaded
the machine is, never before a worker has started. Acknowledgements are read from their
output. Each killed appender is then started again, as an agent retrying would be: it
sends the batch it saw no whole acknowledgement for again, with the same uids, and one more.
After each round the store is opened again (an unclean shutdown: the startup probe runs)
and must hold every acknowledged message exactly once and nothing unacknowledged (the
batch in flight at the kill was sent again), each appender's messages in each session in
the order they were acknowledged, every acknowledged summary, every acknowledged message
found by search (the killed processes' index batches caught up), and
pass the integrity checks (the index equal to one rebuilt from nothing). Rounds accumulate
on one store, and the tier fails unless it verified its minimum of acknowledged appends
and of batches sent again.
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
BATCH = 2


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


def writer_of(uid: str) -> str:
    return uid.rsplit("-", 1)[0]


def check_round(path: Path, session_ids: list[str], appended: dict[str, list[str]], summaries: list[str],
                *, intact: bool = True) -> int:
    """Every acknowledged write of the round stored once, in each writer's order, nothing
    unacknowledged, and every acknowledged message searchable; with `intact`, also the
    whole store checked (assert_intact: verify() and the index against one rebuilt from
    nothing, each a pass over everything stored so far)."""
    with sessiondb.open_store(path) as store:
        # In commit order, archived rows too: a compaction moves the rows above its watermark
        # after the summary and keeps their order.
        sessions = {sid: [m.uid for m in store.transcript(sid, include_compacted=True)] for sid in session_ids}
        # Acknowledged means searchable, from this process, after the writers were killed
        # mid-batch: the search catches the index up first.
        found = {writer: {h.uid for h in store.search(f'"{writer}"', limit=1000)} for writer in appended}
        # A search ranks within the newest 1,000 matches: a writer that a loaded machine let
        # run on past that before its kill has its older messages looked for one by one.
        for writer, uids in appended.items():
            found[writer] |= {h.uid for u in uids if u not in found[writer] for h in store.search(f'"{u}"', limit=20)}
    counts = Counter(u for uids in sessions.values() for u in uids)
    twice = [u for u, n in counts.items() if n > 1]
    assert twice == [], f"stored twice: {twice[:5]}"
    missing = [u for u in summaries if u not in counts]
    assert missing == [], f"acknowledged summaries lost: {missing[:5]}"
    for writer, uids in appended.items():
        lost = [u for u in uids if u not in counts]
        assert lost == [], f"{writer}: acknowledged but not stored: {lost[:5]}"
        unacked = sorted(set(u for u in counts if writer_of(u) == writer) - set(uids))
        assert unacked == [], f"{writer}: stored but never acknowledged (nor sent again): {unacked[:5]}"
        for sid, stored in sessions.items():
            here = [u for u in stored if writer_of(u) == writer]
            assert here == [u for u in uids if u in set(here)], f"{writer}: out of its order in {sid}: {here}"
        unfound = [u for u in uids if u not in found[writer]]
        assert unfound == [], f"{writer}: acknowledged but not found by search: {unfound[:5]}"
    if intact:
        assert_intact(path)
    return sum(counts.values())


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
    kills = acked_total = rounds_failed = checkpoints = resent = 0
    summaries: list[str] = []
    failures: list[str] = []
    for r in range(rounds):
        appenders = [f"r{r}a{i}" for i in range(APPENDERS)]
        procs = {name: start([str(HERE / "append_worker.py"), str(path), name, "1000000", sids, "--gate",
                              "--batch", str(BATCH)])
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
        for name, uids in appended.items():
            # Started again: the first batch without a whole acknowledgement (the one in
            # flight at the kill, stored or not) is sent again with the same uids, then one more.
            first = len(uids) // BATCH * BATCH
            again = start([str(HERE / "append_worker.py"), str(path), name, str(first + 2 * BATCH), sids,
                           "--batch", str(BATCH), "--from", str(first)])
            try:
                out, err = again.communicate(timeout=300)  # a bound on a hang, not a latency
            except subprocess.TimeoutExpired:
                again.kill()
                out, err = again.communicate()
            if again.returncode != 0 or not out.endswith("done\n"):
                failures.append(f"{name}, started again, ended with {again.returncode}: {err[-500:]}")
            uids += [u for u in acks(out) if u not in uids]
            resent += 1
        acked_total += sum(len(u) for u in appended.values())
        try:
            check_round(path, session_ids, appended, summaries,
                        intact=(r + 1) % intact_every == 0 or r == rounds - 1)
        except AssertionError as exc:
            rounds_failed += 1
            failures.append(f"round {r}: {exc}")
    figures.record(
        tried=kills, failed=rounds_failed, unit="SIGKILLs",
        detail=f"{rounds} rounds of {APPENDERS} appenders (batches of {BATCH}), 1 compactor, 1 checkpointer, each "
               f"killed once ready and after 10-30 acknowledged messages (1-3 maintenance operations); "
               f"{resent} killed appenders started again to send their unacknowledged batch again; "
               f"{acked_total} acknowledged messages (each checked in its writer's order, found by search) and "
               f"{len(summaries)} acknowledged compactions checked, the whole store every "
               f"{intact_every} round(s) and after the last; failed counts rounds whose check failed",
    )
    assert failures == [], "\n".join(failures[:10])
    assert acked_total >= min_acks, f"only {acked_total} acknowledged appends were verified (at least {min_acks})"
    assert resent == rounds * APPENDERS


def test_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=4, figures=figures, seed=4, min_acks=200)


@pytest.mark.long
def test_long_processes_killed_and_checked_whole_after_every_round_lose_and_duplicate_nothing(tmp_path, figures):
    kill_rounds(tmp_path, rounds=17, figures=figures, seed=4, min_acks=1000)


@pytest.mark.long
def test_long_processes_killed_at_random_moments_lose_and_duplicate_no_acknowledged_message(tmp_path, figures):
    kill_rounds(tmp_path, rounds=170, figures=figures, seed=5, min_acks=10_000, intact_every=10)
