"""The contract suite runs every test against every backend through one `store` fixture."""

from __future__ import annotations

import pytest

import sessiondb

BACKENDS = ["sqlite"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def open_backend(backend, tmp_path):
    """A function opening a fresh handle on this test's store (call it again to reopen).

    `name` opens another store of the same backend beside it (a transfer's target, say);
    `profile` opens that profile's store instead of a bare one.
    """
    opened = []

    def open_(name: str = "contract", **options):
        if backend == "sqlite":
            where = {"home": tmp_path / name} if "profile" in options else {"location": tmp_path / f"{name}.db"}
            store = sessiondb.open_store(**where, **options)
        else:  # pragma: no cover - backends join here
            raise NotImplementedError(backend)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_backend, request):
    """This test's store. A test that also takes `clock` (tests/conftest.py) gets a store
    that reads that clock."""
    if "clock" in request.fixturenames:
        return open_backend(clock=request.getfixturevalue("clock"))
    return open_backend()


@pytest.fixture
def stored_rows():
    """rows(store, session_id): every message of a session in every state (rewound too), in
    commit order, as the export's message records (plain dicts, every column)."""
    return _stored_rows


@pytest.fixture
def lineage_rows():
    """rows(store, session_id): every message across the session's lineage, root first."""
    return lambda store, session_id: [m for s in store.lineage(session_id) for m in _stored_rows(store, s.id)]


def _stored_rows(store, session_id):
    return [r["message"] for r in store.export([session_id]) if r["type"] == "message"]
