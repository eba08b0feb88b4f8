from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import corpus  # noqa: E402


@pytest.fixture(scope="session")
def template(tmp_path_factory) -> Path:
    """One healthy store, copied for each test that damages it."""
    return corpus.healthy(tmp_path_factory.mktemp("template"))


@pytest.fixture
def store(template, isolated_home) -> Path:
    """A healthy copy of the template at the default profile's path in the test's home."""
    return corpus.copy_of(template, isolated_home)


def damaged(store: Path, how: str | None) -> Path:
    if how is not None:
        getattr(corpus, how)(store)
    return store


__all__ = ["damaged", "shutil"]
