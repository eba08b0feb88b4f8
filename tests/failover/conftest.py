"""The failover tier's formation (formation.py), and the fleet tests' writers (tests/postgres)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent.parent / "postgres")]

from formation import start_formation  # noqa: E402  (beside this file, found through the line above)
from pgserver import ServerUnavailable  # noqa: E402


@pytest.fixture(scope="module")
def formation():
    """A monitor, a primary and a synchronous secondary on loopback, for this module.

    Where none can be started the tests fail under CI (CI=true) and are skipped elsewhere,
    saying why (`make failover` installs pg_auto_failover first)."""
    try:
        started = start_formation()
    except ServerUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"the failover tier needs a pg_auto_failover formation and none could be started: {exc}")
        pytest.skip(f"no pg_auto_failover formation here: {exc}")
    yield started
    started.destroy()
