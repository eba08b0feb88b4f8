"""What every reliability test asserts of a store once the dust settles: it is intact."""

from __future__ import annotations

from pathlib import Path

import sessiondb
from sessiondb.store.sqlite.index.coverage import differences


def assert_intact(path: Path, *, index_writable: bool = True) -> None:
    """Store.verify() finds nothing broken: the file's integrity, the search index (its own
    file, caught up) against the messages, identities across lineages, counters, order,
    leases, orphans; and the index equals one rebuilt from nothing. On a full disk
    (`index_writable=False`) the index cannot take its next batch: what it holds is still
    checked, and the rebuild comparison waits for space."""
    with sessiondb.open_store(path) as store:
        report = store.verify()
    assert report.ok, report.problems
    if index_writable:
        assert report.notes == [], report.notes
        assert differences(path) == []
    else:
        assert all(n.startswith("search: the index could not be brought up to date") for n in report.notes)
