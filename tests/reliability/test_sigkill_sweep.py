"""SIGKILL during retention sweeps, with appenders writing beside them.

A store holds OLD conversations of a year ago (each rotated once, its originals compacted;
every other one spoken to today) and KEPT ones in use, with rules that remove
conversations idle for 30 days and drop the text of compacted originals older than that,
so both kinds of the sweep's transactions run. Each round starts a sweeper (sweep_worker.py) and
two appenders (append_worker.py) writing to the kept conversations, and kills the sweeper
with SIGKILL once it has reported its own random number of acknowledged transactions (so
the kill lands between two of them or inside the next, however loaded the machine is); the
appenders run to the end. After each round: every old conversation is wholly there or
wholly gone (every session of it, with every message), the kept ones hold every
acknowledged message exactly once in each writer's order, and the store is intact
(verify(): no orphaned rows; the index equals one rebuilt from nothing). The test fails
unless the kills removed conversations over several rounds and left some for later.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import sessiondb
from checks import assert_intact
from sessiondb.testing import FakeClock

HERE = Path(__file__).parent
OLD, KEPT, PER = 40, 2, 5
ROUNDS = 4
DAY = 86400.0


def start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def build(path: Path) -> tuple[dict[str, list[tuple[str, list[str]]]], list[str]]:
    """The old conversations (root -> its sessions with their uids; every other one spoken
    to today in its tip, so it stays and only its compacted originals lose their text) and
    the kept sessions."""
    year_ago = FakeClock(start=time.time() - 365 * DAY)
    old: dict[str, list[tuple[str, list[str]]]] = {}
    with sessiondb.open_store(path, clock=year_ago) as store:
        for c in range(OLD):
            root = store.create_session("cli", user_id=f"old{c}")
            uids = [f"old{c}-{i}" for i in range(PER)]
            store.append(root.id, [{"uid": u, "role": "user", "content": f"{u} words"} for u in uids])
            tip = store.commit_compaction(store.begin_compaction(root.id), {"uid": f"old{c}-sum", "role": "system",
                                                                          "content": "gist"}, mode="rotate")
            old[root.id] = [(root.id, uids), (tip.id, [f"old{c}-sum"])]
    with sessiondb.open_store(path) as store:
        for c, sessions in enumerate(old.values()):
            if c % 2:
                tip, uids = sessions[1]
                store.append(tip, {"uid": f"old{c}-now", "role": "user", "content": "spoken to today"})
                uids.append(f"old{c}-now")
        kept = [store.create_session("cli", user_id=f"kept{k}").id for k in range(KEPT)]
        store.set_policy(inactive_after=30 * DAY, compacted_after=30 * DAY)
    return old, kept


def test_a_sweep_killed_at_any_point_leaves_no_half_removed_conversation_and_loses_nothing_kept(tmp_path, figures):
    path = tmp_path / "state.db"
    old, kept = build(path)
    rng = random.Random()
    appended: dict[str, list[str]] = {}
    kills, mid_sweep = 0, 0
    for round_ in range(ROUNDS):
        sweeper = start([str(HERE / "sweep_worker.py"), str(path)])
        assert sweeper.stdout.readline() == "ready\n", sweeper.stderr.read()
        writers = {f"w{round_}-{k}": start([str(HERE / "append_worker.py"), str(path), f"w{round_}-{k}", "30",
                                            ",".join(kept)]) for k in range(2)}
        wanted, done = rng.randint(1, 8), 0
        while done < wanted:
            line = sweeper.stdout.readline()
            assert line, sweeper.stderr.read()
            done += line == "ack write\n"
        sweeper.send_signal(signal.SIGKILL)
        sweeper.wait()
        kills += 1
        for name, proc in writers.items():
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err
            appended[name] = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("ack ")]
        with sessiondb.open_store(path) as store:
            gone = 0
            for root, sessions in old.items():
                present = []
                for sid, uids in sessions:
                    try:
                        present.append([m.uid for m in store.transcript(sid, include_compacted=True)] == uids)
                    except sessiondb.NotFound:
                        present.append(None)
                assert present in ([True, True], [None, None]), (root, present)  # whole, or wholly gone
                gone += present == [None, None]
            mid_sweep += 0 < gone < OLD // 2
            stored = {sid: [m.uid for m in store.transcript(sid)] for sid in kept}
            for name, acked in appended.items():
                mine = {sid: [u for u in uids if u.startswith(name + "-")] for sid, uids in stored.items()}
                assert sorted(u for uids in mine.values() for u in uids) == sorted(acked)  # each once
                assert all(uids == [u for u in acked if u in uids] for uids in mine.values())  # in order
        assert_intact(path)
    assert mid_sweep, "no kill landed while idle conversations were left to remove"
    with sessiondb.open_store(path) as store:  # the sweep the kills interrupted, finished
        store.apply_policy(dry_run=False)
        for c, sessions in enumerate(old.values()):
            if c % 2:
                root, uids = sessions[0]
                assert [(m.uid, m.content) for m in store.transcript(root, include_compacted=True)] == [
                    (u, None) for u in uids]  # the text of year-old compacted originals dropped, the rows kept
            else:
                assert store.list_sessions(user_id=f"old{c}").items == []  # idle: removed whole
    assert_intact(path)
    figures.record(tried=kills, failed=0, unit="sweeps killed",
                   detail=f"{mid_sweep} of {ROUNDS} kills landed with idle conversations left; none half removed")
