"""Fixtures for the turn tests: a store in the test's home, a session, a working tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiondb import open_store


@pytest.fixture
def store(isolated_home):
    with open_store(home=isolated_home) as s:
        yield s


@pytest.fixture
def session(store):
    return store.create_session("cli", title="turns")


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    return root
