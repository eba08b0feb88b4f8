"""A full disk is not damage (S-48, S-29): on a real tmpfs with no room left, the doctor,
as a library call and as the CLI, reports `disk_full` with the store, the free space and
the space needed, never a damage class and never a recovery into a new file; open refuses
as disk_full naming the store; once space is freed both say the store is fine and every
acknowledged message is there. The disk is a real tmpfs the test mounts
(tests/conftest.py's small_disk)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.errors import DiskFull
from test_full_disk_reads import DIE_WITH_A_WAL, written

#: What the filler leaves free once the store holds its first session: a few appends'
#: worth, whatever the store's own files take on a fresh 2 MB disk.
ROOM = 20 * 1024


def header_pages(db: Path) -> int:
    return int.from_bytes(db.read_bytes()[28:32], "big")


def filled_while_writing(disk: Path) -> tuple[Path, str, list[str]]:
    """A store written to until the disk refused, then closed: the close's checkpoint
    copies the log's first page (the header, with the grown page count) into the main
    file and runs out of room before the pages that would make the file that long."""
    db = disk / "state.db"
    acked: list[str] = []
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli", session_id="full").id
        (disk / "filler").write_bytes(b"\0" * (shutil.disk_usage(disk).free - ROOM))
        with pytest.raises(DiskFull):
            for i in range(10_000):
                store.append(sid, {"uid": f"m{i}", "role": "user", "content": f"kyoto {i} " + "x" * 6000})
                acked.append(f"m{i}")
    return db, sid, acked


def doctor_cli(home: Path, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), "doctor", *args])


def assert_full_not_damaged(report, db: Path) -> None:
    assert report.damage == "none", report.findings
    assert report.disk["full"] and report.disk["free"] < report.disk["needed"], report.disk
    assert report.problems[0].startswith(f"The disk holding {db} is full: "), report.problems
    assert "free, and the store needs" in report.problems[0]
    assert report.steps[0].startswith("Free at least "), report.steps
    assert not any("recover" in step and "do not recover" not in step for step in report.steps), report.steps


def test_a_checkpoint_the_disk_stopped_is_a_full_disk_to_the_doctor_and_to_open(small_disk, fill_disk):
    db, sid, acked = filled_while_writing(small_disk)
    assert acked, "the disk filled before the first append"
    # The situation the doctor used to call truncation: the header counts pages the file lacks.
    assert db.stat().st_size < header_pages(db) * 4096 and Path(f"{db}-wal").stat().st_size
    fill_disk(small_disk)

    assert_full_not_damaged(sessiondb.open_doctor(db).examine(), db)
    shown = doctor_cli(small_disk)
    assert shown.exit_code == 1, shown.output
    assert f"problem      The disk holding {db} is full: " in shown.output
    assert "damage       none" in shown.output and "FULL" in shown.output
    assert "recover --source" not in shown.output and "structural" not in shown.output
    fixed = doctor_cli(small_disk, "--repair")
    assert fixed.exit_code == 1 and "nothing done: the disk is full" in fixed.output, fixed.output

    with sessiondb.open_store(db) as store:  # open reads it whole, and refuses writes as disk_full
        assert [m.uid for m in store.transcript(sid)] == acked
        with pytest.raises(DiskFull) as refused:
            store.append(sid, {"uid": "no room", "role": "user", "content": "x" * 6000})
    assert str(db) in str(refused.value) and "full" in str(refused.value)

    (small_disk / "filler").unlink()
    report = sessiondb.open_doctor(db).examine()
    assert report.healthy and not report.disk["full"], report.problems
    assert doctor_cli(small_disk).exit_code == 0
    with sessiondb.open_store(db) as store:
        assert [m.uid for m in store.transcript(sid)] == acked


def test_a_check_the_disk_stopped_is_never_damage(small_disk, fill_disk):
    """The log must be read through a -shm the full disk cannot grow: the doctor's read
    fails for lack of space, which says nothing about the file."""
    db = small_disk / "state.db"
    written(db)
    subprocess.run([sys.executable, "-c", DIE_WITH_A_WAL, str(db)], check=True)
    Path(f"{db}-shm").unlink()
    fill_disk(small_disk)

    report = sessiondb.open_doctor(db).examine()
    assert_full_not_damaged(report, db)
    assert any("the disk is full" in f and "nothing is known to be damaged" in f for f in report.findings)
    shown = doctor_cli(small_disk, "--json")
    assert shown.exit_code == 1 and '"damage": "none"' in shown.output, shown.output
    with pytest.raises(DiskFull) as refused:
        sessiondb.open_store(db)
    assert str(db) in str(refused.value)


def test_the_doctor_reports_room_to_spare_on_a_disk_that_has_it(small_disk):
    db = small_disk / "state.db"
    written(db)
    report = sessiondb.open_doctor(db).examine()
    assert report.healthy and report.disk["free"] >= report.disk["needed"] and not report.disk["full"]
