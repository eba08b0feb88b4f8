"""What every reliability test asserts of a store once the dust settles: it is intact."""

from __future__ import annotations

from pathlib import Path

import sessiondb


def assert_intact(path: Path) -> None:
    """Store.verify() finds nothing broken: the file's integrity, both search indexes
    against the messages, identities across lineages, counters, order, leases, orphans.
    A stale index would leave its coverage unchecked, so it fails here too."""
    with sessiondb.open_store(path) as store:
        report = store.verify()
    assert report.ok, report.problems
    assert report.notes == [], report.notes
    assert report.checked["messages_fts"] == report.checked["messages_trigram"]
