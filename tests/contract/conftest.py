"""The contract suite runs every test against every backend through one `store` fixture."""

from __future__ import annotations

import pytest

import sessiondb

BACKENDS = ["sqlite", "postgresql"]
#: The contract files the PostgreSQL backend runs today. The others (lineage and
#: compaction, search, transfer, the clock, turns, identity reads, late writes, lineage
#: flags) run on SQLite only until that backend implements what they test.
ON_POSTGRES = {"test_sessions", "test_messages", "test_usage", "test_async", "test_append_model", "test_routing"}


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        module = metafunc.module.__name__.rpartition(".")[2]
        metafunc.parametrize("backend", [b for b in BACKENDS if b == "sqlite" or module in ON_POSTGRES])


@pytest.fixture
def backend(request) -> str:
    return request.param


@pytest.fixture
def store_location(backend, request, tmp_path):
    """(location, options) of this test's own empty store on `backend`."""
    if backend == "postgresql":
        return request.getfixturevalue("pg_server").url(), {"schema": request.getfixturevalue("pg_schema")}
    return tmp_path / "contract.db", {}


@pytest.fixture
def open_backend(backend, tmp_path, request):
    """A function opening a fresh handle on this test's store (call it again to reopen).

    `name` opens another store of the same backend beside it (a transfer's target, say);
    `profile` opens that profile's store instead of a bare one.
    """
    opened = []

    def open_(name: str = "contract", **options):
        if backend == "sqlite":
            where = {"home": tmp_path / name} if "profile" in options else {"location": tmp_path / f"{name}.db"}
            store = sessiondb.open_store(**where, **options)
        else:  # one schema of its own per store of this test (store_location's for its own), on the suite's server
            location, defaults = request.getfixturevalue("store_location")
            profile = options.pop("profile", None)
            schema = defaults["schema"] if (name, profile) == ("contract", None) else f"{defaults['schema']}_{name}_{profile or 'main'}".lower()
            store = sessiondb.open_store(location, profile=profile, schema=schema, **options)
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
