"""The contract suite runs every test against every backend through the fixtures of
sessiondb.testing, the plugin a backend outside sessiondb runs the same suite with."""

from __future__ import annotations

from sessiondb.testing import (  # noqa: F401  (fixtures and the hook that parametrizes `backend`)
    backend, lineage_rows, open_backend, pytest_generate_tests, store, store_location, stored_rows,
)
