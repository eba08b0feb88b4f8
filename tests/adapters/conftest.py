"""The adapters' tests run on every backend: an empty store of this test's own on each."""

from __future__ import annotations

import pytest

import sessiondb


@pytest.fixture(params=["sqlite", "postgresql"])
def store_place(request, tmp_path):
    """(location, options) of this test's own empty store, on SQLite and on PostgreSQL:
    what `open_store` takes, here or in another process."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_server").url(), {"schema": request.getfixturevalue("pg_schema")}
    return str(tmp_path / "adapter.db"), {}


@pytest.fixture
def store(store_place):
    location, options = store_place
    with sessiondb.open_store(location, **options) as opened:
        yield opened


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch):
    """Nothing an SDK traces leaves the machine: LangSmith's export is off whatever the environment says."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")
    monkeypatch.delenv("LANGSMITH_API_KEY", raising=False)
    monkeypatch.delenv("LANGCHAIN_API_KEY", raising=False)


class RotatingBeforeTheRewind:
    """The store, with a compaction's rotation (summary "gist") committed as the first rewind
    is asked for once `armed`: after whatever an undo read, before its rewind."""

    def __init__(self, store, lease):
        self._store, self._lease, self.armed, self.committed = store, lease, False, False

    def __getattr__(self, name):
        if name == "rewind" and self.armed and not self.committed:
            self._store.commit_compaction(self._lease, {"role": "user", "content": "gist"}, mode="rotate")
            self.committed = True
        return getattr(self._store, name)


@pytest.fixture
def rotating_before_the_rewind(store):
    """Wrap this test's store so that the compaction of `lease` rotates between an undo's read
    and its rewind (set `armed` once the adapter is built: building it may look the rewind up)."""
    return lambda lease: RotatingBeforeTheRewind(store, lease)
