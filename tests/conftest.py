"""Suite-wide set-up: every test runs against a throw-away home, never the user's own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path, monkeypatch):
    """A fresh SESSIONDB_HOME for each test (the user's ~/.sessiondb is never touched)."""
    home = tmp_path / "home"
    monkeypatch.setenv("SESSIONDB_HOME", str(home))
    return home
