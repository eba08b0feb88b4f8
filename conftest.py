"""Set-up for every test of the repository (tests/ and the contract suite,
sessiondb/testing/contract): the contract suite's plugin, and a real PostgreSQL server for
the PostgreSQL backend's tests."""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
from pathlib import Path

import pytest

# S-24: every process this suite starts inherits the marker, so none of them can open the
# user's real store (sessiondb.home.refuse_real_home_under_test).
os.environ["SESSIONDB_UNDER_TEST"] = "1"

# The contract suite's fixtures (a home of each test's own, the clock, the stores of every backend).
pytest_plugins = ["sessiondb.testing"]

# --- a real PostgreSQL server for the PostgreSQL backend's tests --------------------------

sys.path.insert(0, str(Path(__file__).parent / "tests"))
import pgpooler  # noqa: E402  (tests/pgpooler.py, found through the line above)
import pgserver  # noqa: E402  (tests/pgserver.py)


def _started(start, what: str):
    """What `start()` starts; where it cannot be, the tests that need it fail under CI
    (CI=true) and are skipped elsewhere, saying why."""
    try:
        return start()
    except pgserver.ServerUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"tests need {what} and it could not be started: {exc}")
        pytest.skip(f"no {what} here: {exc}")


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the whole run, from the machine's binaries (tests/pgserver.py)."""
    server = _started(pgserver.start_server, "a PostgreSQL server")
    yield server
    server.destroy()


@pytest.fixture(scope="session")
def pg_vector_server():
    """A PostgreSQL server with pgvector (the `pgserver` wheel's PostgreSQL 16, which the
    test extra installs: Debian's PostgreSQL 15 has no pgvector), for the tests of its scan."""
    server = _started(lambda: pgserver.start_server(pgserver.vector_bindir()), "a PostgreSQL server with pgvector")
    yield server
    server.destroy()


@pytest.fixture(scope="session")
def pg_pooler(pg_server):
    """pgbouncer in transaction mode in front of the run's server (tests/pgpooler.py), with
    fewer server connections than its clients open."""
    pooler = _started(lambda: pgpooler.start_pooler(pg_server), "pgbouncer")
    yield pooler
    pooler.stop()


@pytest.fixture
def pg_schema(request):
    """A schema name of this test's own, so every test starts from an empty store."""
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
    return f"t_{digest}_{next(_schemas)}"


_schemas = itertools.count()


