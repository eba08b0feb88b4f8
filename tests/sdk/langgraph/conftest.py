"""Each of LangGraph's conformance tests runs on the SDK's own InMemorySaver (the control)
and on SessiondbSaver over SQLite and PostgreSQL, each on an empty store of its own."""

from __future__ import annotations

import pytest

import sessiondb
from tests.sdk.langgraph.implementation import IMPLEMENTATIONS, registered

collect_ignore = ["conformance"]  # the suite itself: run through test_conformance.py and validate()


@pytest.fixture(params=IMPLEMENTATIONS)
def checkpointer(request, tmp_path):
    """The registered checkpointer of this run (the suite's `@checkpointer_test`)."""
    if request.param == "InMemorySaver":
        yield registered(request.param, None)
        return
    location, options = str(tmp_path / "checkpoints.db"), {}
    if request.param == "sessiondb-postgresql":
        location, options = request.getfixturevalue("pg_server").url(), {"schema": request.getfixturevalue("pg_schema")}
    with sessiondb.open_store(location, **options) as store:
        yield registered(request.param, store)
