"""The contract suite runs every test against every backend through the fixtures of
sessiondb.testing, the plugin a backend outside sessiondb runs the same suite with."""

from __future__ import annotations

from sessiondb import testing
from sessiondb.testing import (  # noqa: F401  (the suite's fixtures)
    backend, lineage_rows, open_backend, store, store_location, stored_rows,
)


def pytest_generate_tests(metafunc):
    # Loaded as a plugin as well (-p sessiondb.testing --sessiondb-backend=...), it parametrizes.
    if not metafunc.config.pluginmanager.has_plugin("sessiondb.testing"):
        testing.pytest_generate_tests(metafunc)
