"""Concurrency soak: 4 processes x 4 threads appending, searching, compacting, pruning and
backing up one store for a fixed time (soak_worker.py). At the end: every acknowledged
append stored exactly once and no gap in any thread's sequence, every acknowledged
compaction's summary stored, the pinned sessions all there (prune takes only unpinned
scratch sessions), no unexpected error in any thread, and the store and every backup pass
their integrity checks."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

import sessiondb
from checks import assert_intact

WORKER = Path(__file__).with_name("soak_worker.py")
PROCESSES = 4


def soak(tmp_path: Path, seconds: float, figures) -> None:
    path = tmp_path / "soak.db"
    backups = tmp_path / "backups"
    backups.mkdir()
    with sessiondb.open_store(path) as store:
        session_ids = [store.create_session("cli", session_id=f"soak-{n}").id for n in range(4)]
        for sid in session_ids:
            store.set_flags(sid, pinned=True)
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, str(WORKER), str(path), f"p{n}", str(seconds), str(backups),
                               ",".join(session_ids)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for n in range(PROCESSES)]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=seconds + 120)
        assert proc.returncode == 0, err[-2000:]
        outputs.append(out)
    elapsed = time.monotonic() - started
    lines = [line for out in outputs for line in out.splitlines()]
    kinds = Counter(line.split(" ", 1)[0] for line in lines)
    crashes = [line for line in lines if line.startswith("crash ")]
    acked = [line.split(" ", 1)[1] for line in lines if line.startswith("ack ")]
    summaries = [line.split(" ", 1)[1] for line in lines if line.startswith("sum ")]
    backup_files = sorted({line.split(" ", 1)[1] for line in lines if line.startswith("backup ")})
    refused = Counter(line.split(" ", 1)[1] for line in lines if line.startswith("refused "))

    with sessiondb.open_store(path) as store:
        rows = [m for sid in session_ids for m in store.transcript(sid, include_compacted=True)]
        hits = len(store.search("kyoto", limit=1000))
    counts = Counter(m.uid for m in rows)
    figures.record(
        tried=len(acked) + len(summaries) + kinds["backup"], failed=len(crashes), unit="acknowledged operations",
        detail=f"{PROCESSES} processes x 4 threads for {seconds:.0f} s ({elapsed:.1f} s with start-up): "
               f"{len(acked)} appends, {len(summaries)} compactions, {kinds['backup']} backups acknowledged; "
               f"expected refusals {dict(refused)}; failed counts unexpected errors",
    )
    assert crashes == [], crashes[:3]
    assert [u for u, n in counts.items() if n > 1] == [], "a message was stored twice"
    assert [u for u in acked if u not in counts] == [], "an acknowledged append was lost"
    assert [u for u in summaries if u not in counts] == [], "an acknowledged summary was lost"
    by_thread = defaultdict(list)
    for uid in counts:
        if "-sum-" not in uid:
            writer, i = uid.rsplit("-", 1)
            by_thread[writer].append(int(i))
    for writer, seq in by_thread.items():
        assert sorted(seq) == list(range(len(seq))), f"{writer} has a gap"
    assert len(acked) > 0 and hits > 0
    assert_intact(path)
    kept = [Path(b) for b in backup_files if Path(b).exists()]
    for backup in kept[:: max(1, len(kept) // 40)]:  # at most ~40 of them, spread out
        assert_intact(backup)


def test_four_processes_of_four_threads_mixing_every_call_keep_every_invariant(tmp_path, figures):
    soak(tmp_path, seconds=4, figures=figures)


@pytest.mark.long
def test_long_four_processes_of_four_threads_mixing_every_call_keep_every_invariant(tmp_path, figures):
    soak(tmp_path, seconds=180, figures=figures)
