"""After the copy (S-13, S-28): once `cp other.db state.db` lands under a live writer, the
WAL left beside the copy belongs to the file that was replaced. No process ever reads it
over the copy: the next open sees exactly the replacement's content, the stale WAL is kept
as evidence beside the store (never replayed), the refused batch waits in the spool for
the generation that refused it, and the doctor says what happened. Real processes, real
files, real `cp`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.store import spool

sys.path.insert(0, str(Path(__file__).parent))  # the writer process and helpers the safety tests share
from writers import PROFILE, LiveWriter, another_store, assert_refused, spooled_uids  # noqa: E402

# A fresh process: the titles and message uids it sees, and what its open did with the spool.
READ_IN_A_FRESH_PROCESS = """
import json, sys, sessiondb
with sessiondb.open_store(home=sys.argv[1], profile=sys.argv[2]) as store:
    sessions = store.list_sessions(include_archived=True, include_hidden=True, limit=1000).items
    print(json.dumps({"titles": sorted(s.title or s.id for s in sessions),
                      "uids": sorted(m.uid for s in sessions for m in store.transcript(s.id, include_compacted=True))}))
"""


def fresh_read(home: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", READ_IN_A_FRESH_PROCESS, str(home), PROFILE],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def copied_under_a_live_writer(home: Path, db: Path) -> None:
    """The incident: a `sessiondb backup` copy of the store taken earlier (another
    generation, the same sessions) copied with cp over the file of a writer with newer
    commits in its WAL; the writer's next append refused and spooled; the writer gone."""
    writer = LiveWriter(home)
    copy = db.with_name("earlier.db")
    with sessiondb.open_store(home=home, profile=PROFILE) as store:
        store.backup(copy)
    for i in range(5):
        assert writer.send(f"append before-{i}")["ok"]
    assert Path(f"{db}-wal").stat().st_size > 0, "the writer's commits should still be in its WAL"
    subprocess.run(["cp", str(copy), str(db)], check=True)
    assert_refused(writer.send("append after-copy"), "replaced")
    writer.close()
    assert Path(f"{db}-wal").stat().st_size > 0, "the stale WAL should be left beside the copy"


def test_the_next_open_after_a_copy_sees_exactly_the_replacement(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    copied_under_a_live_writer(isolated_home, db)

    seen = fresh_read(isolated_home)

    assert seen == {"titles": ["live"], "uids": ["first"]}  # the copy's content, nothing of the old WAL
    assert fresh_read(isolated_home) == seen  # and so does every later open


def test_the_stale_wal_is_kept_as_evidence_and_never_replayed(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    copied_under_a_live_writer(isolated_home, db)
    stale = Path(f"{db}-wal").read_bytes()

    fresh_read(isolated_home)

    [kept] = list(db.parent.glob("retired-wal-*"))
    assert (kept / "state.db-wal").read_bytes() == stale
    manifest = json.loads((kept / "manifest.json").read_text())
    assert manifest["cause"] == "replaced" and manifest["bytes"] == len(stale)
    assert manifest["wal_generation"] != manifest["database_generation"]


def test_the_refused_batch_waits_for_the_generation_that_refused_it_and_the_doctor_says_so(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    copied_under_a_live_writer(isolated_home, db)

    assert "after-copy" not in fresh_read(isolated_home)["uids"]
    [waiting] = spool.pending(db)
    assert spool.read(waiting)["generation"]
    result = CliRunner().invoke(main, ["--home", str(isolated_home), "-p", PROFILE, "doctor", "--json"])
    report = json.loads(result.output)
    assert result.exit_code == 1
    text = " ".join(report["findings"] + report["problems"])
    assert "another generation" in text and "retired-WAL" in text


def test_a_long_running_process_hands_the_new_generation_to_new_handles_while_old_ones_stay_refused(isolated_home):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    writer = LiveWriter(isolated_home)
    try:
        assert writer.send("append before")["ok"]
        subprocess.run(["cp", str(another_store(isolated_home)), str(db)], check=True)
        assert_refused(writer.send("append after-copy"), "replaced")

        fresh = writer.send("fresh on-the-new-file")

        assert fresh == {"ok": True, "titles": ["someone else's store"]}, fresh
        assert_refused(writer.send("append still-old"), "replaced")
        assert writer.send("fresh again")["ok"]
    finally:
        writer.close()
    seen = fresh_read(isolated_home)
    assert "someone else's store" in seen["titles"] and "live" not in seen["titles"]
    assert {"on-the-new-file", "again"} <= set(seen["uids"])
    assert not {"before", "after-copy", "still-old"} & set(seen["uids"])
    assert len(spool.pending(db)) == 2  # the old handle's refusals wait for their generation


def test_a_spooled_batch_is_replayed_into_the_generation_that_refused_it_and_waits_elsewhere(isolated_home):
    from sessiondb.inputs import prepare_messages

    db = isolated_home / "state.db"
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli").id
        generation = store.backend.generation
    mine = spool.write(db, sid, prepare_messages({"uid": "mine", "role": "user", "content": "x"}), "replaced",
                       generation)
    theirs = spool.write(db, sid, prepare_messages({"uid": "theirs", "role": "user", "content": "y"}), "replaced",
                         "sessiondb-generation:" + "0" * 32)
    with sessiondb.open_store(db) as store:
        assert [m.uid for m in store.transcript(sid)] == ["mine"]
        kept = store.replay_spool().kept
    assert not mine.exists() and theirs.exists()
    assert kept[0][0] == str(theirs) and "another generation" in kept[0][1]


@pytest.mark.parametrize("how", ["cp", "mv"])
def test_a_process_that_closed_its_refused_handle_opens_the_replacement(isolated_home, how):
    db = isolated_home / "profiles" / PROFILE / "state.db"
    writer = LiveWriter(isolated_home)
    try:
        assert writer.send("append before")["ok"]
        replacement = another_store(isolated_home)
        if how == "cp":
            subprocess.run(["cp", str(replacement), str(db)], check=True)
        else:
            os.replace(replacement, db)
        assert_refused(writer.send("append after-copy"), "replaced")
        assert writer.send("close")["ok"]

        fresh = writer.send("fresh on-the-new-file")

        assert fresh == {"ok": True, "titles": ["someone else's store"]}, fresh
    finally:
        writer.close()
    assert "on-the-new-file" in fresh_read(isolated_home)["uids"]
    assert spooled_uids(db) == ["after-copy"]  # waits for the file that refused it
