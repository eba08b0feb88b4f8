"""`sessiondb doctor`: every kind of damage is named by its class, and --repair heals only the
classes that can be healed in place (index, schema), refusing the others with the recover
steps. The damaged stores are real: made in the test (see corpus.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import corpus
import sessiondb
from .conftest import damaged
from sessiondb.cli import main
from sessiondb.store import spool
from sessiondb.store.sqlite.safety import doctor
from sessiondb.inputs import NewMessage

CORPUS = [(how, cls) for how, cls, _refused in corpus.KINDS]
HEALABLE = [how for how, cls in CORPUS if cls in ("index", "schema")]
STRUCTURAL = [how for how, cls in CORPUS if cls == "structural"]


def run(home: Path, *args: str):
    return CliRunner().invoke(main, ["--home", str(home), *args])


def sidecars_and_main(db: Path) -> dict[str, str]:
    return {s: corpus.digest(Path(f"{db}{s}")) for s in ("", "-wal", "-shm", "-journal")}


@pytest.mark.parametrize("how, cls", CORPUS)
def test_doctor_json_names_the_class_of_every_damaged_store(store, isolated_home, how, cls):
    damaged(store, how)
    before = sidecars_and_main(store)

    result = run(isolated_home, "doctor", "--json")

    report = json.loads(result.output)
    assert report["damage"] == cls, report["findings"]
    assert result.exit_code == (0 if how is None else 1)  # a foreign WAL is no damage, but has a step (S-49)
    assert sidecars_and_main(store) == before, "examining a store changed it"


def test_a_healthy_report_carries_every_field(store, isolated_home):
    report = json.loads(run(isolated_home, "doctor", "--json").output)

    assert report["healthy"] is True and report["damage"] == "none"
    assert report["sqlite_version"].startswith("3.")
    assert report["journal_mode"] == "wal"
    assert report["identity"]["generation"].startswith("sessiondb-generation:")
    assert report["identity"]["inode"] == store.stat().st_ino
    assert report["integrity"] == {"check": "quick_check", "complete": True, "errors": []}
    assert isinstance(report["free_pages"], int) and report["holders"] == [] and report["spool_pending"] == 0
    text = run(isolated_home, "doctor")
    assert text.exit_code == 0 and "damage       none" in text.output and "healthy" in text.output


def test_deep_runs_the_full_integrity_check(store, isolated_home):
    report = json.loads(run(isolated_home, "doctor", "--deep", "--json").output)
    assert report["integrity"]["check"] == "integrity_check"


def test_fix_the_previous_release_s_name_of_repair_still_repairs_and_names_the_new_one(store, isolated_home):
    damaged(store, HEALABLE[0])
    result = run(isolated_home, "doctor", "--fix", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["damage"] == "none"
    assert "is now `sessiondb doctor --repair`" in result.stderr


@pytest.mark.parametrize("how", HEALABLE)
def test_fix_heals_index_and_schema_damage_and_keeps_every_message(store, isolated_home, how):
    damaged(store, how)

    result = run(isolated_home, "doctor", "--repair", "--json")

    report = json.loads(result.output)
    assert result.exit_code == 0, report
    assert report["damage"] == "none" and report["healthy"]
    assert any("forensic backup" in a for a in report["repair"]["actions"])
    assert report["backups"], "no forensic backup was kept"
    with sessiondb.open_store(store) as healed:
        assert healed.stats().messages == corpus.SESSIONS * corpus.MESSAGES
        assert len(healed.search("kyoto", limit=1000)) == corpus.SESSIONS * corpus.MESSAGES
    assert json.loads(run(isolated_home, "doctor", "--deep", "--json").output)["damage"] == "none"


@pytest.mark.parametrize("how", STRUCTURAL)
def test_fix_refuses_structural_damage_with_the_recover_steps_and_changes_nothing(store, isolated_home, how):
    damaged(store, how)
    before = sidecars_and_main(store)

    result = run(isolated_home, "doctor", "--repair", "--json")

    report = json.loads(result.output)
    assert result.exit_code == 1
    assert report["damage"] == "structural"
    assert any("recover --source" in step for step in report["steps"])
    assert report["repair"]["backup"] is None
    assert sidecars_and_main(store) == before


def spool_one(store: Path) -> str:
    with sessiondb.open_store(store) as s:
        sid = s.create_session("cli").id
    spool.write(store, sid, [NewMessage(uid="kept", role="user", content="waited in the spool",
                                        parts=None, tool_calls=None, tool_call_id=None, tool_name=None,
                                        reasoning=None, finish_reason=None, token_count=None, timestamp=None,
                                        display_kind=None, state="active", tool_call_total=0)], "corrupt")
    return sid


def test_fix_replays_the_spool_of_a_healthy_store(store, isolated_home):
    sid = spool_one(store)
    assert json.loads(run(isolated_home, "doctor", "--json").output)["spool_pending"] == 1

    report = json.loads(run(isolated_home, "doctor", "--repair", "--json").output)

    assert report["spool_pending"] == 0 and report["healthy"]
    with sessiondb.open_store(store) as s:
        assert [m.uid for m in s.transcript(sid)] == ["kept"]


def test_the_repair_replays_the_spool_only_through_its_caller_and_only_once_healed(store):
    sid = spool_one(store)
    damaged(store, "garble_index_blocks")
    assert doctor.repair(store).spool_pending == 1  # no replay given: the spool waits

    damaged(store, "garble_index_blocks")
    seen = []

    def replay():
        seen.append(doctor.examine(store).damage)  # called on a healed file, never a damaged one
        with sessiondb.open_store(store) as s:
            return s.replay_spool()

    report = doctor.repair(store, replay=replay)
    assert seen == ["none"] and report.spool_pending == 0 and report.healthy
    with sessiondb.open_store(store) as s:
        assert [m.uid for m in s.transcript(sid)] == ["kept"]


def test_the_recover_steps_name_the_profile(isolated_home, template):
    db = corpus.copy_of(template, isolated_home / "profiles" / "work")
    corpus.zero_header(db)

    result = run(isolated_home, "-p", "work", "doctor")

    assert result.exit_code == 1
    assert f"-p work recover --source {db}" in result.output


def test_examine_reads_a_store_this_process_has_open_without_disturbing_it(store):
    with sessiondb.open_store(store) as live:
        sid = live.create_session("cli").id
        report = doctor.examine(store)
        live.append(sid, {"role": "user", "content": "still writable"})
        assert report.damage == "none"
    with sessiondb.open_store(store) as s:
        assert len(s.transcript(sid)) == 1


def test_a_stale_search_index_is_index_damage_and_fix_rebuilds_it(store, isolated_home):
    import apsw

    conn = apsw.Connection(str(store))
    conn.execute("INSERT INTO store_meta(key, value) VALUES ('search_stale', '1')")
    conn.close()
    assert json.loads(run(isolated_home, "doctor", "--json").output)["damage"] == "index"

    report = json.loads(run(isolated_home, "doctor", "--repair", "--json").output)

    assert report["damage"] == "none" and report["index_stale"] is False


def test_repair_refuses_while_this_process_has_the_store_open(store):
    corpus.garble_index_blocks(store)
    with sessiondb.open_store(store):
        with pytest.raises(doctor.RepairRefused, match="this process has"):
            doctor.repair(store)
    assert doctor.examine(store).damage == "index"


def test_a_missing_store_is_a_problem_not_a_crash(isolated_home):
    result = run(isolated_home, "doctor", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 1 and report["exists"] is False and report["damage"] == "none"


def test_damage_is_said_in_words_with_sqlites_own_text_kept_as_the_detail(store, isolated_home):
    damaged(store, "garble_table_pages")
    report = doctor.examine(store)
    assert report.problems[0].startswith("The store file is damaged: part of its messages table cannot be read"), \
        report.problems
    assert not any("Tree " in problem or "page " in problem for problem in report.problems)
    sqlite_said = [f for f in report.findings if f.startswith("table messages: ")]
    assert sqlite_said
    shown = run(isolated_home, "doctor").output
    assert "problem      The store file is damaged: part of its messages table" in shown
    assert f"  - {sqlite_said[0]}" in shown


def test_the_doctor_on_an_empty_home_names_a_first_step(tmp_path):
    home = tmp_path / "new-home"
    shown = run(home, "doctor").output.splitlines()
    assert shown[0].endswith("state.db does not exist")
    assert shown[1].startswith(f"first step   To fill it, import a tool's history (`sessiondb --home {home} import "
                               "--from claude-code`")
    assert f"`sessiondb --home {home} demo`" in shown[1]
    assert not home.exists()  # examined, not created
