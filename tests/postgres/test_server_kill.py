"""The long tier (`make reliability-postgres`): the server SIGKILLed mid-load, again and again.

With synchronous_commit=on (tests/pgserver.py), an append sessiondb acknowledged was
flushed to the server's WAL before the acknowledgement, so crash recovery keeps it. Three
writer processes append batches to two conversations' original ids through every crash
(each retries within its patience) while a fourth process rotates and compacts them in
place, in turn. Every few server kills one writer is SIGKILLed too and started again: it
re-sends the batch it had not seen acknowledged, with the same uids. At the end every
acknowledged message is stored once across its conversation's lineage, each writer's in
its order, found by a search for its own word, every acknowledged summary is stored, and
the store passes verify().
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import sessiondb
from fleet_writers import WORKER, acks

ROUNDS = 100  # server kills
WRITERS = 3
BATCH = 4
WRITER_KILL_EVERY = 5  # rounds; the writers are killed in turn
WORDS_PER_SEARCH = 50  # one search asks for this many messages' words, OR'd
COMPACTOR = Path(__file__).parent / "compact_worker.py"
pytestmark = pytest.mark.long


class Writer:
    """One writer's process, started again after a kill at its first unacknowledged batch."""

    def __init__(self, name: str, url: str, schema: str, sessions: list[str], log: Path) -> None:
        self.name, self.url, self.schema, self.sessions, self.log = name, url, schema, sessions, log
        self.errors = log.with_suffix(".stderr")  # a file: a pipe nobody reads fills and stalls the writer
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    def acked(self) -> list[str]:
        return acks(self.log.read_text()) if self.log.exists() else []

    def start(self) -> None:
        first = len(self.acked())  # whole batches: the one in flight at the kill is sent again
        with open(self.log, "a") as out, open(self.errors, "a") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(WORKER), self.url, self.schema, self.name, str(1_000_000 - first),
                 *self.sessions, "--batch", str(BATCH), "--first", str(first)],
                stdout=out, stderr=err)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def died(self) -> str | None:
        if self.process.poll() is None:
            return None
        return f"{self.name} exited {self.process.returncode}: {self.errors.read_text()[-2000:]}"


def test_a_hundred_server_kills_mid_load_lose_no_acknowledged_write(pg_server, pg_url, pg_schema, tmp_path):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        conversations = [store.create_session("fleet").id for _ in range(2)]
    writers = [Writer(f"w{k}", pg_url, pg_schema, conversations, tmp_path / f"w{k}.acks") for k in range(WRITERS)]
    for writer in writers:
        writer.start()
    compactions = tmp_path / "compactor.acks"
    with open(compactions, "w") as out, open(tmp_path / "compactor.stderr", "w") as err:
        compactor = subprocess.Popen([sys.executable, str(COMPACTOR), pg_url, pg_schema, "c", *conversations],
                                     stdout=out, stderr=err)
    rng = random.Random(31)
    kills = 0
    try:
        for round_ in range(ROUNDS):
            time.sleep(rng.uniform(0.2, 0.8))
            dead = [d for d in map(Writer.died, writers) if d]
            assert not dead, f"a writer died: {dead}"
            assert compactor.poll() is None, f"the compactor died: {(tmp_path / 'compactor.stderr').read_text()}"
            pg_server.kill()
            kills += 1
            pg_server.start()
            if round_ % WRITER_KILL_EVERY == 0:
                writer = writers[(round_ // WRITER_KILL_EVERY) % WRITERS]
                writer.kill()
                writer.restarts += 1
                writer.start()
        time.sleep(1.0)
    finally:
        for process in [compactor] + [w.process for w in writers]:
            process.send_signal(signal.SIGKILL)
            process.wait()
    acked = {w.name: w.acked() for w in writers}
    lines = compactions.read_text().splitlines(keepends=True)
    summaries = [line.split() for line in lines if line.startswith("ack ") and line.endswith("\n")]
    refusals = Counter(line.split()[1].rstrip(":") for line in lines if line.startswith("refused "))
    total = sum(len(uids) for uids in acked.values())
    restarts = sum(w.restarts for w in writers)
    rotations = sum(1 for s in summaries if s[1] == "rotate")
    assert kills >= ROUNDS and total >= 2 * ROUNDS * BATCH, (kills, total)
    assert restarts >= ROUNDS // WRITER_KILL_EVERY and rotations >= 10 and len(summaries) - rotations >= 10, \
        (restarts, rotations, len(summaries))
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        searched, problems = check_store(store, conversations, acked, [s[2] for s in summaries])
    print(f"{kills} server kills, {restarts} writer kills and restarts, {total} acknowledged messages in "
          f"{total // BATCH} batches, {rotations} rotations and {len(summaries) - rotations} in-place compactions "
          f"acknowledged (compactions refused: {dict(refusals)}), {searched} searches; problems: {dict(Counter(kind for kind, _ in problems))}")
    assert problems == [], "\n".join(f"{kind}: {what}" for kind, what in problems[:20])


def check_store(store, conversations: list[str], acked: dict[str, list[str]],
                summaries: list[str]) -> tuple[int, list[tuple[str, str]]]:
    """Every acknowledged message stored once in its conversation's lineage, each writer's
    in its order there, live (not left active in a session a rotation closed), found by
    search; every acknowledged summary stored; verify() passes. The number of searches
    made, and each problem found as (kind, what)."""
    problems: list[tuple[str, str]] = []
    stored: list[str] = []
    for conversation in conversations:
        # The lineage root first, tip last; each session's rows (compacted ones too) in order.
        lineage = store.lineage(conversation)
        rows = [(s, m) for s in lineage for m in store.transcript(s.id, include_compacted=True)]
        stored += [m.uid for _, m in rows]
        problems += [("active in a closed session", f"{m.uid} in {s.id}") for s, m in rows
                     if m.state == "active" and s.end_reason == "compression"]
        for writer in acked:
            mine = [(s.id, m.uid) for s, m in rows if m.uid.startswith(f"{writer}-")]
            problems += [("out of its writer's order", f"{a[1]} in {a[0]} before {b[1]} in {b[0]}")
                         for a, b in zip(mine, mine[1:]) if a[1] > b[1]]
    counts = Counter(stored)
    problems += [("stored twice", u) for u, n in counts.items() if n > 1]
    problems += [("acknowledged but not stored", u) for uids in acked.values() for u in uids if u not in counts]
    problems += [("acknowledged summary not stored", u) for u in summaries if u not in counts]
    searched = 0
    everything = [u for uids in acked.values() for u in uids]
    for at in range(0, len(everything), WORDS_PER_SEARCH):
        asked = everything[at:at + WORDS_PER_SEARCH]
        hits = Counter(h.uid for h in store.search(" OR ".join(u.replace("-", "x") for u in asked), limit=1000))
        searched += 1
        problems += [("not found by search", u) for u in asked if u not in hits]
        problems += [("found twice by search", u) for u, n in hits.items() if n > 1]
    report = store.verify()
    problems += [("verify", p) for p in ([] if report.ok else report.problems)]
    return searched, problems
