"""Shared set-up of the reliability harness: the VFS shim on the path, and the figures.

Each harness test reports what it tried through the `figures` fixture:

    figures.record(tried=1200, failed=0, unit="images", detail="...")

When SESSIONDB_FIGURES names a file, the records (with each test's tier and duration) are
appended to it as JSON lines; `render_figures.py` turns them into docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


class Figures:
    def __init__(self, test: str, tier: str) -> None:
        self.test = test
        self.tier = tier
        self.entries: list[dict] = []

    def record(self, *, tried: int, failed: int, unit: str, detail: str = "") -> None:
        self.entries.append({"tried": tried, "failed": failed, "unit": unit, "detail": detail})


@pytest.fixture
def figures(request):
    tier = "long" if request.node.get_closest_marker("long") else "quick"
    fig = Figures(request.node.nodeid, tier)
    started = time.monotonic()
    yield fig
    target = os.environ.get("SESSIONDB_FIGURES")
    if target and fig.entries:
        elapsed = time.monotonic() - started
        os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
        with open(target, "a", encoding="utf-8") as f:
            for entry in fig.entries:
                f.write(json.dumps({"test": fig.test, "tier": tier, "seconds": round(elapsed, 1), **entry}) + "\n")
