"""A writer in another process, and the helpers the safety tests share."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import sessiondb
from sessiondb.store import spool

WRITER = Path(__file__).with_name("live_writer.py")
PROFILE = "work"


class LiveWriter:
    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(home), PROFILE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        ready = self.proc.stdout.readline()
        assert ready.startswith("ready"), ready + self.proc.stderr.read()

    def send(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        return json.loads(line)

    def close(self) -> None:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent"


def another_store(isolated_home) -> Path:
    with sessiondb.open_store(home=isolated_home, profile="other") as other:
        other.create_session("cli", title="someone else's store")
    return isolated_home / "profiles" / "other" / "state.db"


def spooled_uids(db: Path) -> list[str]:
    return [m["uid"] for p in spool.pending(db) for m in spool.read(p)["messages"]]


def assert_refused(reply: dict, cause: str) -> None:
    assert reply["ok"] is False, reply
    assert reply["cause"] == cause, reply
    assert f"-p {PROFILE}" in reply["guidance"] or cause == "compression_closed", reply["guidance"]


