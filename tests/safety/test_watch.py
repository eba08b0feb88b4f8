"""The name watch that lets the WAL check skip its fstat (S-14): it must report every
creation, deletion and rename that names the WAL, and nothing else."""

from __future__ import annotations

import os

from sessiondb.store.sqlite.safety.watch import NameWatch


def test_every_name_change_of_the_wal_is_seen_and_other_names_are_not(tmp_path):
    wal = tmp_path / "state.db-wal"
    watch = NameWatch(str(tmp_path), wal.name)
    try:
        assert not watch.changed()
        wal.write_bytes(b"x")  # created
        assert watch.changed() and not watch.changed()
        with open(wal, "ab") as f:  # written to: not a name change
            f.write(b"more")
        (tmp_path / "other").write_bytes(b"y")
        assert not watch.changed()
        os.rename(tmp_path / "other", wal)  # mv over the WAL
        assert watch.changed()
        os.remove(wal)  # deleted
        assert watch.changed() and not watch.changed()
    finally:
        watch.close()


def test_a_watch_that_lost_its_directory_always_says_maybe(tmp_path):
    directory = tmp_path / "store"
    directory.mkdir()
    watch = NameWatch(str(directory), "state.db-wal")
    try:
        os.rename(directory, tmp_path / "moved")
        assert watch.changed() and watch.changed()
    finally:
        watch.close()
