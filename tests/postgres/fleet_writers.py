"""Starting writer processes (append_worker.py), reading what they acknowledged, and
checking that the store kept it (the fleet tests, the server kill tier, the failover tier)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

WORKER = Path(__file__).parent / "append_worker.py"
COMPACTOR = Path(__file__).parent / "compact_worker.py"
WORDS_PER_SEARCH = 50  # one search asks for this many messages' words, OR'd


def start_writer(url: str, schema: str, writer: str, count: int, sessions: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), url, schema, writer, str(count), *sessions],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def acknowledged(process: subprocess.Popen, timeout: float = 300) -> tuple[list[str], str]:
    """(the uids the writer acknowledged, its stderr) once it exits."""
    out, err = process.communicate(timeout=timeout)
    return acks(out), err


def acks(out: str) -> list[str]:
    """The uids a writer's output acknowledged, in order (a line cut short by a kill is none)."""
    return [uid for line in out.splitlines(keepends=True) if line.startswith("ack ") and line.endswith("\n")
            for uid in line.split()[1:]]


def check_sessions(store, session_ids, acked):
    """Every acknowledged uid stored exactly once, each writer's in its order, seqs unbroken."""
    stored = [m for sid in session_ids for m in store.transcript(sid)]
    uids = [m.uid for m in stored]
    assert len(uids) == len(set(uids)), "a message was stored twice"
    assert set(acked) <= set(uids), f"acknowledged but lost: {sorted(set(acked) - set(uids))[:5]}"
    for sid in session_ids:
        rows = store.transcript(sid)
        assert [m.seq for m in rows] == list(range(1, len(rows) + 1))
        by_writer: dict[str, list[str]] = {}
        for m in rows:
            by_writer.setdefault(m.uid.split("-")[0], []).append(m.uid)
        for writer_uids in by_writer.values():
            assert writer_uids == sorted(writer_uids), "a writer's messages were stored out of its order"
    report = store.verify()
    assert report.ok, report.problems


class Writer:
    """One writer's process, started again after a kill at its first unacknowledged batch."""

    def __init__(self, name: str, url: str, schema: str, sessions: list[str], log: Path, batch: int) -> None:
        self.name, self.url, self.schema, self.sessions, self.log = name, url, schema, sessions, log
        self.batch = batch
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
                 *self.sessions, "--batch", str(self.batch), "--first", str(first)],
                stdout=out, stderr=err)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def died(self) -> str | None:
        if self.process.poll() is None:
            return None
        return f"{self.name} exited {self.process.returncode}: {self.errors.read_text()[-2000:]}"


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


def stopped(compactor: subprocess.Popen, writers: list[Writer], compactions: Path
            ) -> tuple[dict[str, list[str]], list[list[str]], Counter]:
    """Kill the compactor and the writers; what each writer had acknowledged, the
    compactions acknowledged (their ack lines, split) and the refusals by kind."""
    for process in [compactor] + [w.process for w in writers]:
        process.send_signal(signal.SIGKILL)
        process.wait()
    lines = compactions.read_text().splitlines(keepends=True)
    summaries = [line.split() for line in lines if line.startswith("ack ") and line.endswith("\n")]
    refusals = Counter(line.split()[1].rstrip(":") for line in lines if line.startswith("refused "))
    return {w.name: w.acked() for w in writers}, summaries, refusals
