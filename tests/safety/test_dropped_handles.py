"""Abandoned handles are released (S-11, S-27): a store dropped without close() lets go of
its descriptors once collected, with a ResourceWarning, and never of what another handle on
the same file still uses."""

from __future__ import annotations

import gc
import os
import time
import warnings
from pathlib import Path

import pytest

import sessiondb

PATIENCE = 30.0  # seconds the reaper thread is given; the test fails, never hangs


def descriptors_on(db: Path) -> int:
    """This process's open descriptors on the store's files (database and sidecars)."""
    names = {str(db), f"{db}-wal", f"{db}-shm"}
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") in names
        except OSError:
            continue  # closed while listing
    return count


def eventually(condition) -> bool:
    """Whether `condition` holds once the reaper had time to act (it runs on its own thread)."""
    deadline = time.monotonic() + PATIENCE
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def warned():
    return pytest.warns(ResourceWarning, match="without close")


def test_a_store_dropped_without_close_releases_its_descriptors_with_a_warning(tmp_path):
    db = tmp_path / "state.db"
    store = sessiondb.open_store(db)
    store.append(store.create_session("cli").id, {"role": "user", "content": "hello"})
    assert descriptors_on(db) >= 3
    with warned():
        del store
        gc.collect()
    assert eventually(lambda: descriptors_on(db) == 0)
    with sessiondb.open_store(db) as again:
        assert again.stats().messages == 1


def test_dropping_one_handle_leaves_another_on_the_same_file_working(tmp_path):
    db = tmp_path / "state.db"
    kept = sessiondb.open_store(db)
    sid = kept.create_session("cli").id
    dropped = sessiondb.open_store(db)
    dropped.append(sid, {"role": "user", "content": "from the dropped handle"})
    its_backend = dropped.backend  # to see when the reaper has released it
    with warned():
        del dropped
        gc.collect()
    assert eventually(its_backend._closed.is_set)
    kept.append(sid, {"role": "user", "content": "still writing"})
    assert [m.content for m in kept.transcript(sid)] == ["from the dropped handle", "still writing"]
    assert descriptors_on(db) >= 3
    kept.close()
    assert eventually(lambda: descriptors_on(db) == 0)


def test_a_closed_store_is_not_warned_about(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with sessiondb.open_store(tmp_path / "state.db") as store:
            store.create_session("cli")
        del store
        gc.collect()
