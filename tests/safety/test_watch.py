"""The file watch that lets the identity check skip its system calls (S-13, S-14): it must
report every creation, deletion and rename of the names it watches, every write to and
(un)link of the watched file, and nothing else."""

from __future__ import annotations

import os
import shutil

from sessiondb.store.sqlite.safety.containment import EVERYTHING, FILE, FileWatch


def test_every_name_change_of_the_wal_is_seen_and_other_names_are_not(tmp_path):
    wal = tmp_path / "state.db-wal"
    watch = FileWatch(str(tmp_path), (wal.name,))
    try:
        assert watch.changes() == set()
        wal.write_bytes(b"x")  # created
        assert watch.changes() == {wal.name} and watch.changes() == set()
        with open(wal, "ab") as f:  # written to: not a name change
            f.write(b"more")
        (tmp_path / "other").write_bytes(b"y")
        assert watch.changes() == set()
        os.rename(tmp_path / "other", wal)  # mv over the WAL
        assert watch.changes() == {wal.name}
        os.remove(wal)  # deleted
        assert watch.changes() == {wal.name} and watch.changes() == set()
    finally:
        watch.close()


def test_every_write_to_the_watched_file_and_every_link_change_is_seen_whatever_the_path(tmp_path):
    db = tmp_path / "state.db"
    db.write_bytes(b"\0" * 8192)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    held = os.open(db, os.O_RDONLY)
    watch = FileWatch(str(tmp_path), (), held)
    try:
        assert watch.watches_file and watch.changes() == set()
        os.pread(held, 4096, 0)  # reading changes nothing
        assert watch.changes() == set()
        other = tmp_path / "other.db"
        other.write_bytes(b"another database")
        shutil.copyfile(other, db)  # cp onto the same inode
        assert FILE in watch.changes()
        os.link(db, elsewhere / "alias.db")  # a second name, in another directory
        assert watch.changes() == {FILE}
        with open(elsewhere / "alias.db", "r+b") as f:  # written through the other name
            f.write(b"x")
        assert watch.changes() == {FILE}
        os.rename(other, db)  # mv over the store: our inode loses its link
        assert watch.changes() == {FILE}
    finally:
        watch.close()
        os.close(held)


def test_a_watch_that_lost_its_directory_always_says_everything(tmp_path):
    directory = tmp_path / "store"
    directory.mkdir()
    watch = FileWatch(str(directory), ("state.db-wal",))
    try:
        os.rename(directory, tmp_path / "moved")
        assert watch.changes() is EVERYTHING and watch.changes() is EVERYTHING
    finally:
        watch.close()
