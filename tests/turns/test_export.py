"""Turn records travel with their session in the export (format version 2); a version-1
file, which has none, still imports."""

from __future__ import annotations

import json

import pytest

from sessiondb import InvalidInput, open_store

RECEIPT = {"path": "/tree/a.py", "error": "no match", "mtime_ns": 5, "size": 3}


@pytest.fixture
def source(tmp_path):
    with open_store(tmp_path / "source.db") as store:
        sid = store.create_session("cli", title="with turns").id
        store.append(sid, {"uid": "u1", "role": "user", "content": "go"})
        first = store.begin_turn(sid, user_uid="u1", cwd="/tree")
        second = store.begin_turn(sid, user_uid="u2")
        store.end_turn(first.id, "redirect_limit", receipts=[RECEIPT], continued_by=second.id)
        yield store, sid


@pytest.fixture
def target(tmp_path):
    with open_store(tmp_path / "target.db") as store:
        yield store


def lines(store):
    return [json.dumps(r) for r in store.export()]


def test_turns_round_trip_through_an_export_and_are_skipped_when_imported_again(source, target):
    store, sid = source
    exported = lines(store)
    assert json.loads(exported[0])["version"] == 2
    assert json.loads(exported[-1])["turns"] == 2
    report = target.import_records(exported)
    assert (report.turns_imported, report.turns_skipped) == (2, 0)
    assert target.turns(sid) == store.turns(sid)
    assert target.import_records(exported).turns_skipped == 2
    assert store.export_session(sid)["turns"][0]["receipts"] == [RECEIPT]


def test_a_version_1_export_still_imports(source, target):
    store, sid = source
    old = [json.loads(line) for line in lines(store) if json.loads(line)["type"] != "turn"]
    old[0]["version"] = 1
    del old[-1]["turns"]
    report = target.import_records(old)
    assert report.sessions_created == 1 and report.messages_imported == 1
    assert target.turns(sid) == []


def test_a_turn_record_in_a_version_1_file_is_refused(source, target):
    store, _sid = source
    records = [json.loads(line) for line in lines(store)]
    records[0]["version"] = 1
    with pytest.raises(InvalidInput, match="unknown record type 'turn' in a version 1 export"):
        target.import_records(records)
    assert target.stats().sessions == 0


@pytest.mark.parametrize("change", [
    {"reason": "completed"},  # stored outcome interrupted: the reason disagrees
    {"reason": None},  # ended without a reason
    {"reason": "made_up"},
    {"receipts": {"not": "a list"}},
])
def test_a_bad_turn_record_refuses_its_whole_session(source, target, change):
    store, _sid = source
    records = [json.loads(line) for line in lines(store)]
    turn = next(r for r in records if r["type"] == "turn")
    turn["turn"].update(change)
    with pytest.raises(InvalidInput):
        target.import_records(records)
    assert target.stats().sessions == 0
