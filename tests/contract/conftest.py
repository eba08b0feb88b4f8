"""The contract suite runs every test against every backend through one `store` fixture."""

from __future__ import annotations

import pytest

import sessiondb

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def store_location(backend, request, tmp_path):
    """(location, options) of this test's own empty store on `backend`."""
    if backend == "postgresql":
        server = request.getfixturevalue("pg_server")
        return server.url(), {"schema": request.getfixturevalue("pg_schema")}
    return tmp_path / "contract.db", {}


@pytest.fixture
def open_backend(backend, tmp_path, store_location):
    """A function opening a fresh handle on this test's store (call it again to reopen)."""
    opened = []

    def open_(**options):
        location, defaults = store_location
        store = sessiondb.open_store(location, **defaults, **options)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_backend):
    return open_backend()
