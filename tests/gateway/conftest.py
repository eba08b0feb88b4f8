"""Fixtures for the gateway tests: a gateway over the test's home, and a lock holder process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sessiondb import open_store
from sessiondb.gateway import Gateway

HOLDER = r"""
import sys, apsw
conn = apsw.Connection(sys.argv[1])
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
conn.close()
"""


@pytest.fixture
def home(isolated_home) -> Path:
    return isolated_home


@pytest.fixture
def gateway(home):
    gw = Gateway(home, retry_interval=0.2, patience=0.2)
    gw.recover()
    yield gw
    gw.close()


def make_profile(home: Path, name: str) -> None:
    """Create a profile's home the way a person would: by opening its store once."""
    open_store(home=home, profile=name).close()


class WriteLockHolder:
    """Another process holding a store's write lock (BEGIN IMMEDIATE) until released."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)


@pytest.fixture
def lock_holder():
    holders = []

    def hold(db: Path) -> WriteLockHolder:
        holder = WriteLockHolder(db)
        holders.append(holder)
        return holder

    yield hold
    for holder in holders:
        holder.release()


def texts(store, session_id: str) -> list[str]:
    return [m.content for m in store.transcript(session_id, include_compacted=True)]


def all_texts(store) -> list[str]:
    """Every message text in a store, in commit order within each session, across all sessions."""
    return [r["message"]["content"] for r in store.export() if r.get("type") == "message"]
