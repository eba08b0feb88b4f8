"""The doctor agrees with open (S-29): on every kind of damage of the corpus, open refuses
exactly the files whose damage the header and schema show, the doctor never says `none`
of a file open refuses, and the class it reports is the one its repair acts on: `index`
and `schema` are healed in place (and the store opens again with every message), while
`structural` gets the recover steps, and a backup to restore where one exists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import corpus
import sessiondb
from .conftest import damaged
from sessiondb.cli import main
from sessiondb.errors import SessionDBError

ALL_MESSAGES = corpus.SESSIONS * corpus.MESSAGES


def doctor_json(home: Path, *args: str) -> dict:
    return json.loads(CliRunner().invoke(main, ["--home", str(home), "doctor", "--json", *args]).output)


def opens_and_writes(db: Path) -> tuple[SessionDBError | None, SessionDBError | None]:
    """What open refuses, and what a write after a successful open refuses (None: nothing)."""
    try:
        store = sessiondb.open_store(db)
    except SessionDBError as exc:
        return exc, None
    with store:
        try:
            store.append(store.create_session("cli").id, {"role": "user", "content": "after the damage"})
        except SessionDBError as exc:
            return None, exc
    return None, None


@pytest.mark.parametrize("how, cls, refused", corpus.KINDS, ids=[str(k[0]) for k in corpus.KINDS])
def test_open_refuses_what_the_doctor_reports_and_the_doctor_names_a_class_its_repair_acts_on(
        store, isolated_home, how, cls, refused):
    damaged(store, how)
    report = doctor_json(isolated_home)
    refusal, write_refusal = opens_and_writes(store)

    assert report["damage"] == cls, report["findings"]
    assert (refusal is not None) == refused, refusal
    # Damage inside a page is invisible to open; a write that lands on that page (which
    # one does depends on the minted session id) is refused then, naming the doctor.
    for refused_now in (refusal, write_refusal):
        if refused_now is not None:
            assert report["damage"] != "none" and "doctor" in str(refused_now)

    if cls in ("index", "schema"):
        healed = doctor_json(isolated_home, "--repair")
        assert healed["damage"] == "none", healed["findings"]
        with sessiondb.open_store(store) as s:
            assert s.stats().messages >= ALL_MESSAGES
            assert len(s.search("kyoto", limit=1000)) == ALL_MESSAGES
    elif cls == "structural":
        assert any("recover --source" in step for step in report["steps"])


@pytest.mark.parametrize("how", [k[0] for k in corpus.KINDS if k[1] == "structural"])
def test_structural_damage_names_restoring_an_existing_backup_as_a_step(store, isolated_home, how):
    copy = store.with_name("copy.db")
    with sessiondb.open_store(store) as s:
        s.backup(copy)
    damaged(store, how)
    steps = doctor_json(isolated_home)["steps"]
    assert any("restore" in step.lower() and str(copy) in step for step in steps), steps


def test_without_a_backup_copy_the_forensic_set_of_the_last_repair_is_named(store, isolated_home):
    damaged(store, "garble_schema_row")
    assert doctor_json(isolated_home, "--repair")["damage"] == "none"
    damaged(store, "zero_header")
    report = doctor_json(isolated_home)
    assert any("forensic backup" in step and report["backups"][-1] in step for step in report["steps"])


def test_a_foreign_wal_is_reported_by_the_doctor_and_never_read_over_the_file(store, isolated_home):
    damaged(store, "foreign_wal")
    report = doctor_json(isolated_home)
    assert report["damage"] == "none"
    assert any("written for another file" in finding for finding in report["findings"]), report["findings"]
    with sessiondb.open_store(store) as s:
        titles = {x.title for x in s.list_sessions(limit=1000).items}
    assert "only in the old WAL" not in titles and len(titles) == corpus.SESSIONS
    assert any("set aside unreplayed" in f for f in doctor_json(isolated_home)["findings"])
