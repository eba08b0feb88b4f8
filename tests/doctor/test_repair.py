"""Repair is bounded (S-20), backed up (S-21) and never runs under a live holder (S-22)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import corpus
import sessiondb
from .conftest import damaged
from sessiondb.cli import main
from sessiondb.errors import StoreDamaged, StoreHeld
from sessiondb.store.sqlite.safety import doctor, forensics, ledger
from sessiondb.store.sqlite.safety import repair as surgery

BIG_DISK = 10 ** 12


def files(db: Path) -> dict[str, str]:
    return {s: corpus.digest(Path(f"{db}{s}")) for s in ("", "-wal", "-shm", "-journal")}


def test_three_failed_repairs_of_one_file_stop_the_fourth(store, monkeypatch):
    damaged(store, "garble_index_blocks")
    monkeypatch.setattr(surgery, "_operate", lambda db, report, actions: actions.append("did nothing"))

    passes = [doctor.repair(store).repair["failed_passes"] for _ in range(3)]

    assert passes == [1, 2, 3]
    before = files(store)
    backups = forensics.list_sets(store)
    with pytest.raises(doctor.RepairRefused, match="failed 3 times"):
        doctor.repair(store)
    assert files(store) == before and forensics.list_sets(store) == backups
    assert doctor.examine(store).steps[0].startswith("Repair already failed 3 times")


def test_structural_damage_counts_as_a_failed_pass_without_surgery(store):
    damaged(store, "garble_table_pages")
    for expected in (1, 2, 3):
        assert doctor.repair(store).repair["failed_passes"] == expected
    with pytest.raises(doctor.RepairRefused):
        doctor.repair(store)
    assert not forensics.list_sets(store)


def test_a_restore_resets_the_budget_but_an_ordinary_commit_does_not(store, template, monkeypatch):
    damaged(store, "garble_index_blocks")
    key = ledger.file_key(store)
    monkeypatch.setattr(surgery, "_operate", lambda db, report, actions: None)
    for _ in range(3):
        doctor.repair(store)
    # A commit in rollback mode changes only the change counter and version-valid-for.
    with open(store, "r+b") as f:
        f.seek(24), f.write(b"\x00\x00\x01\x00"), f.seek(92), f.write(b"\x00\x00\x01\x00")
    assert ledger.file_key(store) == key and ledger.exhausted(store, key)

    corpus.copy_of(template, store.parent)  # restored from a good copy
    assert doctor.repair(store).damage == "none"  # a pass that finds the file healthy clears its budget
    corpus.garble_index_blocks(store)  # the same damage again, later
    monkeypatch.undo()
    assert not ledger.exhausted(store, ledger.file_key(store))
    assert doctor.repair(store).damage == "none"


def test_the_ledger_key_has_one_shape_with_or_without_a_live_connection(store):
    import sessiondb

    closed = ledger.file_key(store)
    with sessiondb.open_store(store):
        assert ledger.file_key(store) == closed


def test_a_repair_with_no_room_for_a_backup_does_nothing(store):
    damaged(store, "garble_index_blocks")
    before = files(store)

    for space in (lambda d: (1024, BIG_DISK), lambda d: None):
        with pytest.raises(forensics.BackupRefused, match="No repair was attempted|no repair was attempted"):
            doctor.repair(store, free_space=space)

    assert files(store) == before
    assert not forensics.list_sets(store)
    assert not ledger.ledger_path(store).exists(), "a refused repair was counted"
    assert doctor.examine(store).damage == "index"


def test_the_backup_headroom_is_the_copy_plus_256_mib_or_2_percent():
    assert forensics.required_space(1000, 1_000_000_000) == 1000 + 256 * 1024 * 1024
    assert forensics.required_space(1000, 10 ** 13) == 1000 + 2 * 10 ** 11


def test_repair_refuses_while_another_process_holds_the_store(store):
    damaged(store, "garble_index_blocks")
    before = files(store)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; f = open(sys.argv[1], 'rb'); print('held', flush=True); "
         "time.sleep(60)", str(store)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreHeld, match=f"PID {holder.pid}"):
            doctor.repair(store)
        assert doctor.examine(store).holders
    finally:
        holder.kill()
        holder.wait()
    # (examining a held store opens it read-only as SQLite does, which may add an empty -wal/-shm)
    assert files(store)[""] == before[""] and not forensics.list_sets(store)


def test_a_forensic_backup_holds_the_main_file_and_every_sidecar_and_is_not_duplicated(store):
    Path(f"{store}-wal").write_bytes(b"wal bytes")
    Path(f"{store}-shm").write_bytes(b"shm bytes")

    first = forensics.take(store, free_space=lambda d: (BIG_DISK, BIG_DISK))
    again = forensics.take(store, free_space=lambda d: (BIG_DISK, BIG_DISK))

    assert not first.reused and again.reused and again.name == first.name
    for suffix in ("", "-wal", "-shm"):
        assert corpus.digest(Path(f"{first.main}{suffix}")) == corpus.digest(Path(f"{store}{suffix}"))
    manifest = json.loads(Path(f"{first.main}.json").read_text())
    assert set(manifest["files"]) == {first.name, first.name + "-wal", first.name + "-shm"}
    assert oct(first.main.stat().st_mode & 0o777) == "0o600"


def test_only_the_three_newest_backups_are_kept_and_staging_debris_is_swept(store, monkeypatch):
    directory = forensics.backup_dir(store)
    directory.mkdir()
    (directory / ".staging-19700101T000000Z-1-state.db").write_bytes(b"debris")
    (directory / "state.db.forensic-19700101T000000Z-1-wal").write_bytes(b"half a set")
    stamps = iter(f"2026010{i}T000000Z" for i in range(1, 9))
    monkeypatch.setattr(forensics.time, "strftime", lambda fmt, t=None: next(stamps))
    made = []
    for i in range(5):
        Path(f"{store}-wal").write_bytes(f"version {i}".encode())
        made.append(forensics.take(store, free_space=lambda d: (BIG_DISK, BIG_DISK)).name)

    assert [p.name for p in forensics.list_sets(store)] == made[-3:]
    leftovers = sorted(p.name for p in directory.iterdir())
    assert not any(n.startswith(".staging-") or n.startswith("state.db.forensic-19700101") for n in leftovers)
    assert len(leftovers) == 3 * 3  # main, -wal and manifest of each kept set


def test_two_backups_of_different_content_in_the_same_second_are_both_kept(store, monkeypatch):
    monkeypatch.setattr(forensics.time, "strftime", lambda fmt, t=None: "20260101T000000Z")
    taken = {}
    for version in ("first", "second"):
        Path(f"{store}-wal").write_bytes(f"{version} wal".encode())
        taken[version] = forensics.take(store, free_space=lambda d: (BIG_DISK, BIG_DISK))

    assert taken["first"].name != taken["second"].name
    assert [p.name for p in forensics.list_sets(store)] == [taken["first"].name, taken["second"].name]
    for version, backup in taken.items():
        assert Path(f"{backup.main}-wal").read_bytes() == f"{version} wal".encode()
        assert corpus.digest(Path(f"{backup.main}-wal")) == backup.files["-wal"]


def test_a_backup_that_fails_half_way_leaves_nothing_behind(store, monkeypatch):
    Path(f"{store}-wal").write_bytes(b"wal bytes")
    real_replace = os.replace

    def failing(src, dst):
        if not str(dst).endswith(("-wal", ".json")):
            raise OSError(5, "I/O error publishing the main file")
        real_replace(src, dst)

    monkeypatch.setattr(forensics.os, "replace", failing)
    with pytest.raises(OSError):
        forensics.take(store, free_space=lambda d: (BIG_DISK, BIG_DISK))
    assert list(forensics.backup_dir(store).iterdir()) == []


def test_every_repair_connection_uses_full_durability_barriers(store):
    conn = doctor.repair_connection(store)
    try:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    finally:
        conn.close()


def test_a_repair_ends_with_the_wal_checkpointed(store):
    damaged(store, "garble_index_blocks")
    report = doctor.repair(store)
    assert report.damage == "none"
    assert not Path(f"{store}-wal").exists() or Path(f"{store}-wal").stat().st_size == 0


def test_a_repair_in_the_process_that_met_the_damage_replays_the_write_it_refused(store, isolated_home):
    """S-15 keeps a damaged file refused in the process that met the damage; a repair that
    heals it while the process has no handle on it lifts that, so the refused write, kept
    in the spool, is replayed into the healed file instead of failing the repair."""
    damaged(store, "garble_btree_index")
    refused = None
    with sessiondb.open_store(store) as s:
        sessions = [session.id for session in s.list_sessions(limit=100).items]
        # New session ids sort after the corpus's, so new rows go to existing sessions: a
        # random uid lands on the garbled leaf of (session_id, uid) about 1 time in 7.
        for n in range(300):
            session, text = sessions[n % len(sessions)], f"refused write {n}"
            try:
                s.append(session, {"role": "user", "content": text})
            except StoreDamaged as exc:
                refused = session, text, exc
                break
    assert refused is not None and refused[2].spooled_to, "no write met the damaged page"

    healed = json.loads(CliRunner().invoke(main, ["--home", str(isolated_home), "doctor", "--json", "--repair"]).output)

    assert healed["damage"] == "none", healed
    with sessiondb.open_store(store) as s:
        assert [m.content for m in s.transcript(refused[0])].count(refused[1]) == 1
