"""Turn records through the public Store contract (S-50..S-52): begin, end with a reason
whose outcome comes from the guidance table, receipts kept, order, idempotence, refusals."""

from __future__ import annotations

import pytest

from sessiondb import Conflict, InvalidInput, NotFound

RECEIPT = {"path": "/work/tree/app.py", "error": "old text not found", "mtime_ns": 1_700_000_000_000_000_000,
           "size": 42}


@pytest.fixture
def sid(store):
    return store.create_session("cli").id


def test_a_begun_turn_is_running_until_it_ends(store, sid):
    turn = store.begin_turn(sid, user_uid="u-1", cwd="/work/tree")
    assert (turn.session_id, turn.user_uid, turn.cwd) == (sid, "u-1", "/work/tree")
    assert (turn.ended_at, turn.outcome, turn.reason) == (None, None, None)
    assert store.get_turn(turn.id) == turn


@pytest.mark.parametrize("reason, outcome", [
    ("completed", "completed"),
    ("failed", "failed"),
    ("interrupted_by_user", "interrupted"),
    ("interrupted_during_api_call", "interrupted"),
    ("interrupted_by_system(cron_inactivity_watchdog)", "interrupted"),
    ("interrupted_during_api_call(turn_liveness_watchdog)", "interrupted"),
    ("interrupted_by_system(unregistered:quota_sentinel)", "interrupted"),
    ("interrupted_during_api_call(unregistered)", "interrupted"),
    ("redirect_limit", "interrupted"),
    ("resume_pending", "interrupted"),
])
def test_the_outcome_is_the_one_the_reason_names(store, sid, reason, outcome):
    turn = store.begin_turn(sid)
    ended = store.end_turn(turn.id, reason)
    assert (ended.outcome, ended.reason) == (outcome, reason)
    assert ended.ended_at is not None
    assert store.get_turn(turn.id) == ended


def test_receipts_and_detail_are_stored_with_the_turn(store, sid, open_backend):
    turn = store.begin_turn(sid)
    store.end_turn(turn.id, "failed", detail="the model refused", receipts=[RECEIPT])
    again = open_backend().get_turn(turn.id)
    assert again.receipts == [RECEIPT]
    assert again.detail == "the model refused"


def test_a_session_lists_its_turns_oldest_first_and_the_newest_within_the_limit(store, sid):
    ids = [store.begin_turn(sid).id for _ in range(5)]
    assert [t.id for t in store.turns(sid)] == ids
    assert [t.id for t in store.turns(sid, limit=2)] == ids[-2:]


def test_beginning_a_stored_turn_again_returns_it_and_stores_nothing(store, sid):
    first = store.begin_turn(sid, turn_id="t-1", user_uid="u-1")
    assert store.begin_turn(sid, turn_id="t-1", user_uid="u-2") == first
    assert len(store.turns(sid)) == 1


def test_a_turn_id_of_another_session_is_a_conflict(store, sid):
    store.begin_turn(sid, turn_id="t-1")
    other = store.create_session("cli").id
    with pytest.raises(Conflict):
        store.begin_turn(other, turn_id="t-1")
    assert store.turns(other) == []


def test_ending_again_with_the_same_reason_changes_nothing_and_another_reason_is_refused(store, sid):
    turn = store.begin_turn(sid)
    ended = store.end_turn(turn.id, "interrupted_by_user")
    assert store.end_turn(turn.id, "interrupted_by_user") == ended
    with pytest.raises(Conflict):
        store.end_turn(turn.id, "completed")
    assert store.get_turn(turn.id) == ended


def test_a_continuation_must_be_a_turn_of_the_same_session(store, sid):
    turn = store.begin_turn(sid)
    elsewhere = store.begin_turn(store.create_session("cli").id)
    with pytest.raises(NotFound):
        store.end_turn(turn.id, "redirect_limit", continued_by=elsewhere.id)
    following = store.begin_turn(sid)
    assert store.end_turn(turn.id, "redirect_limit", continued_by=following.id).continued_by == following.id


@pytest.mark.parametrize("reason", [
    "stopped", "interrupted_by_system", "interrupted_by_system()", "interrupted_by_system(user)",
    "interrupted_by_system(Watch Dog)", "interrupted_by_system(unregistered:)",
    "interrupted_by_system(unregistered:Watch Dog)", "interrupted_by_system(someone:watch_dog)", "", None, 3,
])
def test_an_unknown_reason_is_refused_and_nothing_is_written(store, sid, reason):
    turn = store.begin_turn(sid)
    with pytest.raises(InvalidInput):
        store.end_turn(turn.id, reason)
    assert store.get_turn(turn.id).reason is None


@pytest.mark.parametrize("receipts", [
    "a.py", [{"path": "relative.py", "error": "x", "mtime_ns": 1, "size": 1}],
    [{"path": "/a.py", "error": "x"}], [{"path": "/a.py", "error": "x", "mtime_ns": -1, "size": 1}],
    [{**RECEIPT, "extra": 1}],
])
def test_bad_receipts_are_refused_and_nothing_is_written(store, sid, receipts):
    turn = store.begin_turn(sid)
    with pytest.raises(InvalidInput):
        store.end_turn(turn.id, "completed", receipts=receipts)
    assert store.get_turn(turn.id).reason is None


def test_a_relative_cwd_is_refused(store, sid):
    with pytest.raises(InvalidInput):
        store.begin_turn(sid, cwd="tree")
    assert store.turns(sid) == []


def test_unknown_sessions_and_turns_are_not_found(store):
    with pytest.raises(NotFound):
        store.begin_turn("no-such-session")
    with pytest.raises(NotFound):
        store.end_turn("no-such-turn", "completed")
    with pytest.raises(NotFound):
        store.get_turn("no-such-turn")


def test_deleting_a_session_deletes_its_turns(store, sid):
    turn = store.begin_turn(sid)
    store.delete_session(sid)
    with pytest.raises(NotFound):
        store.get_turn(turn.id)


def test_turns_travel_with_their_session_through_an_export(store, sid, open_backend):
    first = store.begin_turn(sid, user_uid="u1", cwd="/tree")
    second = store.begin_turn(sid, user_uid="u2")
    store.end_turn(first.id, "redirect_limit", receipts=[RECEIPT], continued_by=second.id)
    exported = list(store.export([sid]))
    assert exported[-1]["turns"] == 2
    target = open_backend("target")
    report = target.import_records(exported)
    assert (report.turns_imported, report.turns_skipped) == (2, 0)
    assert target.turns(sid) == store.turns(sid)
    assert target.import_records(exported).turns_skipped == 2
    assert target.turns(sid) == store.turns(sid)
