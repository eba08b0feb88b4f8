"""Fleet tests of the PostgreSQL backend: real writer processes on a real server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # fleet_writers.py, beside this file


@pytest.fixture
def pg_url(pg_server):
    return pg_server.url()
