"""Importer tests: histories written in each tool's own format (histories.py), under a
throw-away $HOME, so a tool's default location resolves inside the test's directory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The user's home for the test: each tool's default location is under it."""
    path = tmp_path / "user"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    for name in ("CODEX_HOME", "LLM_USER_PATH", "XDG_CONFIG_HOME", "HERMES_HOME"):
        monkeypatch.delenv(name, raising=False)
    return path
