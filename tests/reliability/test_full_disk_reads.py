"""A full disk, read access (S-17): a cleanly closed store on a disk with no byte left
still opens for reading (its -shm cannot grow, so it is read from the main file alone),
refuses writes as disk_full with that cause's sentence, and writes again once space is
freed; a store that cannot be read that way is refused as disk_full too, never as a
generic I/O error. The WAL is kept bounded, so space freed is not taken back by it.
The disk is a real tmpfs the test mounts (tests/conftest.py's small_disk)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb.errors import Cause, DiskFull, classify
from sessiondb.guidance import explain, for_error
from sessiondb.store.sqlite.connect import WAL_SIZE_LIMIT
from sessiondb.store.sqlite.index.indexer import Indexer


def written(db: Path) -> str:
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli", title="kept safe").id
        store.append(sid, [{"role": "user", "content": f"kyoto {i}"} for i in range(20)])
    return sid


def test_a_cleanly_closed_store_on_a_full_disk_opens_for_reading_and_refuses_writes_as_disk_full(small_disk, fill_disk):
    db = small_disk / "state.db"
    sid = written(db)
    filler = fill_disk(small_disk)

    with sessiondb.open_store(db) as store:
        assert [m.content for m in store.transcript(sid)] == [f"kyoto {i}" for i in range(20)]
        assert len(store.search("kyoto", limit=100)) == 20
        assert store.get_session(sid).title == "kept safe"
        with pytest.raises(DiskFull) as refused:
            store.append(sid, {"role": "user", "content": "no room"})
    assert classify(refused.value) is Cause.DISK_FULL
    advice = for_error(refused.value, db_path=db, profile=None)
    assert advice.message == explain(Cause.DISK_FULL, db_path=db, profile=None).message

    filler.unlink()
    with sessiondb.open_store(db) as store:
        store.append(sid, {"role": "user", "content": "room again"})
        assert store.transcript(sid)[-1].content == "room again"


DIE_WITH_A_WAL = (
    "import os, sys, sessiondb\n"
    "s = sessiondb.open_store(sys.argv[1])\n"
    "s.append(s.create_session('cli').id, {'role': 'user', 'content': 'only in the WAL'})\n"
    "os._exit(0)\n"
)


def test_a_store_that_needs_its_wal_on_a_full_disk_is_refused_as_disk_full(small_disk, fill_disk):
    db = small_disk / "state.db"
    written(db)
    subprocess.run([sys.executable, "-c", DIE_WITH_A_WAL, str(db)], check=True)
    Path(f"{db}-shm").unlink()  # the shared memory must be built again, and cannot be
    fill_disk(small_disk)

    with pytest.raises(DiskFull) as refused:
        sessiondb.open_store(db)
    assert classify(refused.value) is Cause.DISK_FULL


def test_the_wal_is_truncated_back_to_its_limit_once_a_long_reader_lets_go(tmp_path, monkeypatch):
    # Only searches index here: the indexer's thread, reading the store at moments of its
    # own, would postpone the WAL's reset to some later write.
    monkeypatch.setattr(Indexer, "_serve", lambda self: self._stopping.wait())
    db = tmp_path / "state.db"
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli").id
        reader = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM messages").fetchall()  # holds its snapshot: no WAL reset
        body = "x" * 100_000
        for i in range(25):
            store.append(sid, [{"role": "tool", "content": body} for _ in range(10)])
        grown = Path(f"{db}-wal").stat().st_size
        assert grown > WAL_SIZE_LIMIT, "the WAL should have grown past the limit while the reader held it"
        reader.execute("COMMIT")
        reader.close()
        store.search("x")  # the index catches up: its batches over those rows read the store too
        for i in range(2):  # the first commit's checkpoint copies every frame back, the next resets the WAL
            store.append(sid, {"role": "user", "content": f"after {i}"})
        assert Path(f"{db}-wal").stat().st_size <= WAL_SIZE_LIMIT
