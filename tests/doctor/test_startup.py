"""After an unclean shutdown the first open probes the file before it writes anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import corpus
import sessiondb
from sessiondb.errors import Cause, StoreDamaged
from sessiondb.store.sqlite.safety import doctor, probe, recover

DIE_WITHOUT_CLOSING = (
    "import os, sys, sessiondb\n"
    "s = sessiondb.open_store(sys.argv[1])\n"
    "x = s.create_session('cli', session_id='last')\n"
    "s.append(x.id, {'role': 'user', 'content': 'written just before the crash'})\n"
    "os._exit(0)\n"
)


def crash_after_a_write(db: Path) -> None:
    subprocess.run([sys.executable, "-c", DIE_WITHOUT_CLOSING, str(db)], check=True)
    assert Path(f"{db}-wal").stat().st_size > 0, "the crash left no WAL behind"


def test_an_unclean_shutdown_is_noticed_and_a_healthy_store_opens(store):
    crash_after_a_write(store)
    assert doctor.unclean_shutdown(store)

    with sessiondb.open_store(store) as s:
        assert [m.content for m in s.transcript("last")] == ["written just before the crash"]


def test_structural_damage_found_after_an_unclean_shutdown_stops_the_open_before_any_write(store):
    leaves = corpus._pages(store, "messages")
    crash_after_a_write(store)
    corpus._garble_page(store, leaves[2])
    before = corpus.digest(store), corpus.digest(Path(f"{store}-wal"))

    with pytest.raises(StoreDamaged) as refused:
        sessiondb.open_store(store)

    assert refused.value.cause is Cause.CORRUPT
    assert "doctor" in str(refused.value)
    assert (corpus.digest(store), corpus.digest(Path(f"{store}-wal"))) == before


def test_a_clean_store_is_not_probed(store, monkeypatch):
    calls = []
    monkeypatch.setattr(probe, "integrity_lines", lambda *a, **k: calls.append(1) or ([], True))
    with sessiondb.open_store(store):
        pass
    assert calls == []


def test_recover_keeps_the_commits_still_in_the_wal_and_leaves_both_files_as_they_were(store, isolated_home):
    crash_after_a_write(store)
    before = corpus.digest(store), corpus.digest(Path(f"{store}-wal"))

    report = recover.recover(store, isolated_home / "new.db")

    assert (corpus.digest(store), corpus.digest(Path(f"{store}-wal"))) == before
    assert report.sessions_kept == corpus.SESSIONS + 1
    with sessiondb.open_store(isolated_home / "new.db") as s:
        assert [m.content for m in s.transcript("last")] == ["written just before the crash"]
