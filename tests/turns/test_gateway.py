"""The gateway's turns are turn records: `turn_finished` takes the reason, and crash
recovery ends a turn the dead process left running as `resume_pending` (or `stale_turn`)."""

from __future__ import annotations

import logging
import time

import pytest

from sessiondb import InvalidInput, keys, open_store
from sessiondb.gateway import Gateway
from sessiondb.guidance import explain_turn

KEY = keys.build("main", "telegram", "dm", "42")


def test_turn_finished_stores_the_reason_it_was_given(isolated_home, caplog):
    with Gateway(isolated_home) as gw:
        session = gw.turn_started(KEY, user_uid="m-1")
        with caplog.at_level(logging.INFO, logger="sessiondb.turns"):
            gw.turn_finished(KEY, "interrupted_by_system(gateway_inactivity_timeout)")
    with open_store(home=isolated_home) as store:
        [turn] = store.turns(session.id)
    assert (turn.user_uid, turn.outcome, turn.reason) == (
        "m-1", "interrupted", "interrupted_by_system(gateway_inactivity_timeout)")
    [line] = [r.getMessage() for r in caplog.records if r.name == "sessiondb.turns"]
    assert explain_turn(turn.reason) in line


def test_a_bad_reason_is_refused_and_the_turn_keeps_running(isolated_home):
    with Gateway(isolated_home) as gw:
        session = gw.turn_started(KEY)
        with pytest.raises(InvalidInput):
            gw.turn_finished(KEY, "stopped somehow")
        assert gw.routes()[0].state == "running"
        with open_store(home=isolated_home) as store:
            assert store.turns(session.id)[0].reason is None
        gw.turn_finished(KEY)
        with open_store(home=isolated_home) as store:
            assert store.turns(session.id)[0].reason == "completed"


def test_a_turn_cut_short_by_a_crash_ends_as_resume_pending_then_resumes(isolated_home):
    with Gateway(isolated_home) as gw:
        session = gw.turn_started(KEY)  # the process "dies" without turn_finished
    with Gateway(isolated_home) as gw:
        assert gw.recover().resumed == [KEY]
        with open_store(home=isolated_home) as store:
            [cut] = store.turns(session.id)
        assert (cut.outcome, cut.reason) == ("interrupted", "resume_pending")
        gw.turn_started(KEY)
        gw.turn_finished(KEY)
    with open_store(home=isolated_home) as store:
        assert [t.reason for t in store.turns(session.id)] == ["resume_pending", "completed"]


def test_a_stale_turn_ends_with_its_session(isolated_home):
    with Gateway(isolated_home) as gw:
        session = gw.turn_started(KEY)
    with Gateway(isolated_home, freshness=60) as gw:
        gw.recover(now=time.time() + 3600)
    with open_store(home=isolated_home) as store:
        assert [t.reason for t in store.turns(session.id)] == ["stale_turn"]
