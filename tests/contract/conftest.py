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
    """A function opening a fresh handle on this test's store (call it again to reopen)."""
    opened = []

    def open_(**options):
        if backend == "sqlite":
            store = sessiondb.open_store(tmp_path / "contract.db", **options)
        else:  # pragma: no cover - backends join here
            raise NotImplementedError(backend)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


@pytest.fixture
def store(open_backend):
    return open_backend()
