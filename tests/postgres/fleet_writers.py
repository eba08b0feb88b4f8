"""Starting writer processes (append_worker.py), reading what they acknowledged, and
checking that the store kept it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).parent / "append_worker.py"


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
