"""A store file hands back the pages a removal frees, a few at a time beside writers (no
VACUUM, which needs every other process gone): every file made since stores keep a map of
their pages; an older one gains it at `sessiondb sessions vacuum`."""

from __future__ import annotations

import os

import apsw

import sessiondb
from sessiondb.testing import FakeClock

DAY = 86400.0


def pragma(path, name):
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def fill(store, clock, conversations=30):
    for c in range(conversations):
        s = store.create_session("cli", user_id=f"u{c}")
        store.append(s.id, [{"role": "user", "content": f"note {i} " + "words " * 200} for i in range(40)])
    clock.advance(100 * DAY)
    store.append(store.create_session("cli").id, {"role": "user", "content": "today"})


def test_a_sweep_hands_the_pages_it_freed_back_to_the_file_system(tmp_path):
    clock = FakeClock()
    path = tmp_path / "state.db"
    with sessiondb.open_store(location=path, clock=clock) as store:
        assert pragma(path, "auto_vacuum") == 2  # incremental: chosen as the file was made
        fill(store, clock)
        store.optimize(force=True)
        before = os.path.getsize(path)
        store.set_policy(inactive_after=30 * DAY)
        report = store.apply_policy(dry_run=False)
        assert len(report.removed) == 30 and report.bytes_released > before // 2
        assert pragma(path, "freelist_count") == 0
        store.optimize(force=True)  # the checkpoint that shrinks the file
        assert os.path.getsize(path) <= before - report.bytes_released


def test_a_file_made_before_hands_pages_back_only_once_vacuumed(tmp_path):
    clock = FakeClock()
    path = tmp_path / "state.db"
    old = apsw.Connection(str(path))  # a file made before stores kept a map of their pages
    old.execute("PRAGMA journal_mode=WAL").fetchall()
    old.close()
    with sessiondb.open_store(location=path, clock=clock) as store:
        assert pragma(path, "auto_vacuum") == 0
        fill(store, clock)
        store.set_policy(inactive_after=30 * DAY)
        assert store.apply_policy(dry_run=False).bytes_released == 0 and pragma(path, "freelist_count") > 0
        store.vacuum(force=True)
        assert pragma(path, "auto_vacuum") == 2 and pragma(path, "freelist_count") == 0


def test_forget_hands_back_what_it_freed(tmp_path):
    clock = FakeClock()
    with sessiondb.open_store(location=tmp_path / "state.db", clock=clock) as store:
        fill(store, clock)
        assert store.forget(user_id="u3").bytes_released > 0
