"""The way back (S-49, S-13, S-14, S-29): after a deleted WAL or a copy over a live store,
every message a real writer process had acknowledged is brought back by one command,
`sessiondb restore-captured`, exactly once however often it runs; what another generation
of the store wrote comes back only when the command says so; and the doctor names that
command for what only it moves, so `doctor --repair` never names itself for the same finding
twice. Real processes, real files, real `rm` and `cp`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.store import spool

sys.path.insert(0, str(Path(__file__).parent))  # the writer process and helpers the safety tests share
from writers import PROFILE, LiveWriter, assert_refused  # noqa: E402

ACKNOWLEDGED = 24  # messages the writer has acknowledged when its files are changed underneath


def cli(home: Path, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), "-p", PROFILE, *args])


def stored_uids(home: Path) -> Counter:
    """Every message uid of the profile's store, counted over every session (any state)."""
    with sessiondb.open_store(home=home, profile=PROFILE) as store:
        return Counter(r["message"]["uid"] for r in store.export() if r.get("type") == "message")


def acknowledged_then(home: Path, db: Path, change, before=lambda: None, checkpoint_after: int | None = None,
                      count: int = ACKNOWLEDGED) -> list[str]:
    """A writer starts (`before` runs then), acknowledges `count` messages (with a
    passive checkpoint after the first `checkpoint_after`, so the WAL starts a new cycle
    over the frames of the old one), `change` runs under it, its next append is refused
    (and spooled), and it exits. Returns the uids it acknowledged."""
    writer = LiveWriter(home)
    acked = ["first"]  # live_writer.py's own opening message
    before()
    try:
        for i in range(count):
            if i == checkpoint_after:
                assert writer.send("checkpoint PASSIVE")["ok"]
            assert writer.send(f"append ack-{i}")["ok"]
            acked.append(f"ack-{i}")
        cause = change()
        assert_refused(writer.send("append refused"), cause)
    finally:
        writer.close()
    return acked


def deleted_wal(home: Path, db: Path) -> list[str]:
    def delete() -> str:
        os.unlink(f"{db}-wal")
        return "deleted_wal"
    return acknowledged_then(home, db, delete)


def copied_over(home: Path, db: Path, checkpoint_after: int | None = None, count: int = ACKNOWLEDGED,
                moved: bool = False) -> list[str]:
    """An earlier backup of the store copied with cp over it (or, `moved`, renamed over it
    with mv) while the writer holds it."""
    earlier = home / "earlier.db"

    def copy() -> str:
        if moved:
            os.replace(earlier, db)
        else:
            subprocess.run(["cp", str(earlier), str(db)], check=True)
        return "replaced"

    def backup_first() -> None:
        with sessiondb.open_store(home=home, profile=PROFILE) as store:
            store.backup(earlier)

    return acknowledged_then(home, db, copy, before=backup_first, checkpoint_after=checkpoint_after, count=count)


def recovered_by_hand(db: Path, tmp_path: Path) -> set[str]:
    """The uids a person finds by copying the store and the captured WAL and recovering
    the copy (`sessiondb recover`), the store being closed."""
    [capture] = db.parent.glob("retired-wal-*")
    by_hand = tmp_path / "by-hand"
    by_hand.mkdir()
    shutil.copy(db, by_hand / "state.db")
    shutil.copy(capture / "state.db-wal", by_hand / "state.db-wal")
    done = CliRunner().invoke(main, ["recover", "--source", str(by_hand / "state.db"),
                                     "--output", str(tmp_path / "recovered.db")])
    assert done.exit_code == 0, done.output
    with sessiondb.open_store(tmp_path / "recovered.db") as recovered:
        return {r["message"]["uid"] for r in recovered.export() if r.get("type") == "message"}


def test_after_a_deleted_wal_every_acknowledged_message_comes_back_exactly_once(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    acked = deleted_wal(isolated_home, db)
    assert set(acked) - set(stored_uids(isolated_home)), "the premise: acknowledged messages are missing"

    first = cli(isolated_home, "restore-captured", "--json")
    assert spool.pending(db) == []  # brought back, so no longer kept
    second = cli(isolated_home, "restore-captured", "--json")

    assert first.exit_code == 0, first.output
    uids = stored_uids(isolated_home)
    assert all(uids[uid] == 1 for uid in acked + ["refused"]), uids
    assert json.loads(first.output)["sessions"]["live"]["restored"] >= len(set(acked) - {"first"})
    assert second.exit_code == 0 and json.loads(second.output)["restored"] == 0
    assert stored_uids(isolated_home) == uids  # nothing twice


def test_after_a_copy_over_a_live_store_the_old_generation_comes_back_only_when_asked(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    acked = copied_over(isolated_home, db)
    missing = set(acked) - set(stored_uids(isolated_home))  # this open sets the old WAL aside
    assert missing, "the premise: acknowledged messages live only in the old file's WAL"

    unasked = cli(isolated_home, "restore-captured", "--json")

    assert unasked.exit_code == 1
    assert "another generation" in " ".join(json.loads(unasked.output)["left"])
    assert set(stored_uids(isolated_home)) & missing == set()

    asked = cli(isolated_home, "restore-captured", "--other-generations", "--json")
    again = cli(isolated_home, "restore-captured", "--other-generations", "--json")

    assert asked.exit_code == 0, asked.output
    uids = stored_uids(isolated_home)
    assert all(uids[uid] == 1 for uid in acked + ["refused"]), uids
    assert again.exit_code == 0 and json.loads(again.output)["restored"] == 0
    assert stored_uids(isolated_home) == uids


def test_what_the_replaced_file_held_before_its_last_checkpoint_comes_back_from_the_frames_its_wal_kept(
        isolated_home, tmp_path):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    # Enough messages for several pages, so the new cycle's 3 appends rewrite only the last ones.
    acked = copied_over(isolated_home, db, checkpoint_after=147, count=150)
    stored_uids(isolated_home)  # an open sets the old WAL aside
    assert set(acked) - recovered_by_hand(db, tmp_path), \
        "the premise: SQLite's reading of the WAL misses what was checkpointed before"

    assert cli(isolated_home, "restore-captured", "--other-generations").exit_code == 0

    uids = stored_uids(isolated_home)
    assert all(uids[uid] == 1 for uid in acked + ["refused"]), uids


def test_after_a_move_over_a_live_store_every_acknowledged_message_comes_back_exactly_once(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    # Enough for several WAL cycles: the old file held the first ones only in its main file,
    # which the writer still had open, their frames long overwritten.
    acked = copied_over(isolated_home, db, count=600, moved=True)
    assert len(set(acked) - set(stored_uids(isolated_home))) == 600, "the premise: the file moved over lacks them"

    done = cli(isolated_home, "restore-captured", "--other-generations")
    again = cli(isolated_home, "restore-captured", "--other-generations", "--json")

    assert done.exit_code == 0, done.output
    uids = stored_uids(isolated_home)
    assert all(uids[uid] == 1 for uid in acked + ["refused"]), uids
    assert json.loads(again.output)["restored"] == 0 and stored_uids(isolated_home) == uids


def test_the_way_back_finds_at_least_what_recovering_by_hand_finds(isolated_home, tmp_path):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    copied_over(isolated_home, db)
    stored_uids(isolated_home)  # an open sets the old WAL aside
    found_by_hand = recovered_by_hand(db, tmp_path)

    assert cli(isolated_home, "restore-captured", "--other-generations").exit_code == 0

    assert found_by_hand <= set(stored_uids(isolated_home))


def test_doctor_fix_twice_never_names_itself_and_the_way_back_leaves_the_store_healthy(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    acked = copied_over(isolated_home, db)

    looked = cli(isolated_home, "doctor", "--json")  # nothing has opened the copy yet: its WAL is foreign
    fixes = [cli(isolated_home, "doctor", "--repair", "--json") for _ in range(2)]

    report = json.loads(looked.output)
    assert looked.exit_code == 1 and report["damage"] == "none"
    assert "restore-captured --other-generations" in report["steps"][0]
    for fix in fixes:
        steps = json.loads(fix.output)["steps"]
        assert fix.exit_code == 1 and steps
        assert not any("doctor --repair" in step for step in steps), steps
        assert "restore-captured --other-generations" in steps[0]
    assert not set(acked[1:]) & set(stored_uids(isolated_home)), "--repair read the old file's WAL over the copy"
    assert cli(isolated_home, "restore-captured", "--other-generations").exit_code == 0
    healthy = cli(isolated_home, "doctor", "--repair", "--json")
    assert healthy.exit_code == 0, healthy.output
    assert json.loads(healthy.output)["steps"] == []


def test_after_a_deleted_wal_the_doctor_names_the_way_back_and_not_itself(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    deleted_wal(isolated_home, db)

    fixes = [json.loads(cli(isolated_home, "doctor", "--repair", "--json").output) for _ in range(2)]

    for report in fixes:
        assert report["steps"] and not any("doctor --repair" in step for step in report["steps"]), report["steps"]
        assert "restore-captured`" in report["steps"][0]
    assert cli(isolated_home, "restore-captured").exit_code == 0
    assert cli(isolated_home, "doctor").exit_code == 0


def test_everything_can_go_into_a_named_new_store_instead(isolated_home, tmp_path):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    acked = copied_over(isolated_home, db)
    stored_uids(isolated_home)  # an open sets the old WAL aside
    new = tmp_path / "kept-apart.db"

    report = sessiondb.restore_captured(home=isolated_home, profile=PROFILE, into=new)

    assert report.complete and report.store == str(new)
    with sessiondb.open_store(new) as kept:
        uids = Counter(r["message"]["uid"] for r in kept.export() if r.get("type") == "message")
    assert all(uids[uid] == 1 for uid in acked + ["refused"]), uids
