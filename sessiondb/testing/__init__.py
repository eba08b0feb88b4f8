"""The contract suite of sessiondb, for any backend: a pytest plugin and its fixtures.

A backend served by a URL scheme (`sessiondb.register_backend`, or an entry point of
the `sessiondb.backends` group) proves it keeps every rule a user can observe by passing
the suite every built-in backend passes:

    pytest --pyargs sessiondb.testing.contract -p sessiondb.testing --sessiondb-backend=memory://

`--sessiondb-backend` (repeatable; or $SESSIONDB_TEST_BACKEND, comma-separated) names
each backend to run every test over: `sqlite`, `postgresql` (which needs a `pg_server`
fixture, as sessiondb's own tests have), `pgbouncer` (the same server reached through a
connection pooler in transaction mode: a `pg_pooler` fixture, `make test-pooler`), or a location prefix such as `memory://` or
`myscheme://host/`, to which each test appends a name of its own, so every test starts
from empty stores. A backend whose locations are spelled otherwise overrides the
`store_location` fixture. Without the option the suite runs over the built-in backends:
SQLite, PostgreSQL and memory (the proof that the primitives are enough: every rule runs
unchanged over its rows).

A test that writes one store from several processes is marked `across_processes` and is
left out over a backend whose stores live in one process (memory://).

Fixtures: `backend` (what the option named), `store_location` ((location, options) of
this test's store), `open_backend` (opens a handle on it, or on another store beside it),
`store`, `stored_rows`, `lineage_rows`, `clock` (a FakeClock), and for every test a home
of its own (`isolated_home`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from typing import Any

import pytest

import sessiondb
from sessiondb.store import locations

OPTION = "--sessiondb-backend"
VARIABLE = "SESSIONDB_TEST_BACKEND"
#: Backends served by a PostgreSQL server -> the fixture whose url() reaches it.
SERVERS = {"postgresql": "pg_server", "pgbouncer": "pg_pooler"}
#: What the suite runs over when no backend is named.
BUILT_IN = ["sqlite", "postgresql", "memory://"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, action="append", default=None, metavar="BACKEND",
                     help="a backend to run sessiondb's contract suite over: sqlite, postgresql or a "
                          f"location prefix such as memory:// (repeatable; default ${VARIABLE} or the built-in ones)")


def selected(config: pytest.Config) -> list[str]:
    """The backends a test runs over (see the module docstring)."""
    try:
        given = config.getoption(OPTION)
    except ValueError:  # the plugin's option is not registered: sessiondb's own tests
        given = None
    if not given and os.environ.get(VARIABLE):
        given = [b.strip() for b in os.environ[VARIABLE].split(",") if b.strip()]
    if given:
        return given
    return BUILT_IN


#: Backends whose stores live inside one process (a location prefix): a test that writes
#: one store from several processes (marked `across_processes`) does not run over them.
IN_ONE_PROCESS = ("memory://",)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "across_processes: the test writes one store from several processes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("backend")
        if item.get_closest_marker("across_processes") and isinstance(backend, str) \
                and backend.startswith(IN_ONE_PROCESS):
            item.add_marker(pytest.mark.skip(reason=f"a {backend} store lives in one process"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test of the suite using the plugin that names its own `backend` parameter keeps it.
    own = any("backend" in (m.args[0] if isinstance(m.args[0], (list, tuple)) else m.args[0].replace(" ", "").split(","))
              for m in metafunc.definition.iter_markers("parametrize"))
    if "backend" in metafunc.fixturenames and not own:
        metafunc.parametrize("backend", selected(metafunc.config))


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """A fresh SESSIONDB_HOME for each test (the user's ~/.sessiondb is never touched)."""
    home = tmp_path / "home"
    monkeypatch.setenv("SESSIONDB_HOME", str(home))
    monkeypatch.setenv("SESSIONDB_UNDER_TEST", "1")  # S-24: no process of the test opens the real home's store
    monkeypatch.delenv("SESSIONDB_ALLOW_REAL_HOME", raising=False)
    monkeypatch.delenv("SESSIONDB_URL", raising=False)  # a developer's own server is never the store under test
    monkeypatch.delenv("SESSIONDB_EMBEDDER", raising=False)  # nor their embedder the one a test recalls with
    return home


class FakeClock:
    """Seconds since the epoch that move only when the test says so; handed to a store
    through its public clock hook (open_store(clock=...))."""

    def __init__(self, start: float = 1_900_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


_tokens = itertools.count()


@pytest.fixture
def store_location(backend: str, request: pytest.FixtureRequest, tmp_path) -> tuple[Any, dict[str, Any]]:
    """(location, options) of this test's own empty store on `backend`."""
    if backend in SERVERS:
        return request.getfixturevalue(SERVERS[backend]).url(), {"schema": request.getfixturevalue("pg_schema")}
    if backend == "sqlite":
        return tmp_path / "contract.db", {}
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
    return f"{_prefix(backend)}t{digest}{next(_tokens)}", {}


def _prefix(backend: str) -> str:
    return backend if "://" in backend else f"{backend}://"


@pytest.fixture
def open_backend(backend: str, tmp_path, request: pytest.FixtureRequest):
    """A function opening a fresh handle on this test's store (call it again to reopen).

    `name` opens another store of the same backend beside it (a transfer's target, say);
    `profile` opens that profile's store instead of a bare one.
    """
    opened = []

    def open_(name: str = "contract", **options):
        if backend == "sqlite":
            where = {"home": tmp_path / name} if "profile" in options else {"location": tmp_path / f"{name}.db"}
            store = sessiondb.open_store(**where, **options)
        elif backend in SERVERS:  # one schema of its own per store of this test (store_location's for its own)
            location, defaults = request.getfixturevalue("store_location")
            profile = options.pop("profile", None)
            schema = defaults["schema"] if (name, profile) == ("contract", None) else f"{defaults['schema']}_{name}_{profile or 'main'}".lower().replace("-", "_")
            store = sessiondb.open_store(location, profile=profile, schema=schema, **options)
        else:  # this test's location, with the name of another store beside it appended
            location, defaults = request.getfixturevalue("store_location")
            if name != "contract":
                location = f"{location}-{name}"
            store = sessiondb.open_store(location, **{**defaults, **options})
            named.append(location)
        opened.append(store)
        return store

    named: list[str] = []
    yield open_
    for store in opened:
        store.close()
    for location in named:  # a store that outlives its handles in this process (memory://) goes with its test
        provider = locations.provider(location.split("://", 1)[0])
        if hasattr(provider, "forget"):
            provider.forget(location)


@pytest.fixture
def store(open_backend, request: pytest.FixtureRequest):
    """This test's store. A test that also takes `clock` gets a store that reads that clock."""
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
