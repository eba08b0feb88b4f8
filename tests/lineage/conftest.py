"""Fixtures of the lineage suite: a real store file per test, and a clock leases obey."""

from __future__ import annotations

import pytest

import sessiondb
from sessiondb.store.sqlite import leases


class FakeClock:
    """Wall-clock time that moves only when told to (leases read it through leases.clock)."""

    def __init__(self, start: float = 1_900_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def store_path(tmp_path):
    return tmp_path / "lineage.db"


@pytest.fixture
def store(store_path):
    with sessiondb.open_store(store_path) as s:
        yield s


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(leases, "clock", fake)
    return fake


@pytest.fixture
def raw_rows():
    """rows(store, session_id): every stored row of a session, rewound ones too, in id order."""
    return _raw_rows


@pytest.fixture
def lineage_rows():
    """rows(store, session_id): every stored row across the session's lineage, root first."""
    return _lineage_rows


def _raw_rows(store, session_id):
    from sessiondb.store.sqlite import messages

    return store.backend._read(
        lambda conn: [
            messages.from_row(r)
            for r in conn.execute(f"SELECT {messages.COLUMNS} FROM messages WHERE session_id = ? ORDER BY id", (session_id,))
        ]
    )


def _lineage_rows(store, session_id):
    return [m for s in store.lineage(session_id) for m in _raw_rows(store, s.id)]
