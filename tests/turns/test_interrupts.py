"""S-50: who stopped a turn. A real agent loop runs in its own thread, alternating model
calls and tool steps; a person or a watchdog thread interrupts it in one phase or the
other, and the stored record, the log line and the explanation name the same reason."""

from __future__ import annotations

import logging
import threading

import pytest

from sessiondb import InvalidInput, open_store
from sessiondb.guidance import explain_turn
from sessiondb.turns import AgentTurn, register_producer


class Agent:
    """A loop over a fake model: the model call announces itself and waits for its answer
    (the test sends it) or an interrupt, like a call waiting on the network; the tool step
    then runs until interrupted."""

    def __init__(self, turn: AgentTurn) -> None:
        self.turn = turn
        self.in_call = threading.Event()
        self.answer = threading.Event()
        self.in_tool = threading.Event()
        self.result = None
        # a daemon: a turn an interrupt failed to stop must fail its test, not hang the run
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.turn.interrupted:
            with self.turn.model_call():
                self.in_call.set()
                while not self.answer.wait(0.005) and not self.turn.interrupted:
                    pass
            if self.turn.interrupted:
                break
            self.in_tool.set()
            self.turn.wait_for_interrupt(timeout=30)
        self.result = self.turn.finish()


def watchdog(turn: AgentTurn, producer: str, expired: threading.Event) -> threading.Thread:
    """A watchdog thread: when its timer expires (the event), it interrupts the turn."""
    def fire() -> None:
        expired.wait()
        turn.request_interrupt(producer)
    thread = threading.Thread(target=fire)
    thread.start()
    return thread


@pytest.mark.parametrize("producer, phase, reason", [
    ("user", "in_call", "interrupted_during_api_call"),
    ("user", "in_tool", "interrupted_by_user"),
    ("turn_liveness_watchdog", "in_call", "interrupted_during_api_call(turn_liveness_watchdog)"),
    ("cron_inactivity_watchdog", "in_tool", "interrupted_by_system(cron_inactivity_watchdog)"),
    ("gateway_inactivity_timeout", "in_call", "interrupted_during_api_call(gateway_inactivity_timeout)"),
    ("lease_lost", "in_tool", "interrupted_by_system(lease_lost)"),
])
def test_the_stored_reason_names_who_stopped_the_turn_and_when(store, session, tree, caplog, isolated_home,
                                                               producer, phase, reason):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "tidy the tree"}, cwd=tree)
    agent = Agent(turn)
    agent.thread.start()
    if phase == "in_tool":
        agent.answer.set()
    assert getattr(agent, phase).wait(30)
    with caplog.at_level(logging.INFO, logger="sessiondb.turns"):
        if producer == "user":
            turn.request_interrupt("user")  # the person presses stop, from another thread
        else:
            expired = threading.Event()
            dog = watchdog(turn, producer, expired)
            expired.set()
            dog.join(30)
        agent.thread.join(30)
    assert not agent.thread.is_alive()
    with open_store(home=isolated_home) as again:
        stored = again.get_turn(turn.id)
    assert (stored.outcome, stored.reason) == ("interrupted", reason)
    [line] = [r.getMessage() for r in caplog.records if r.name == "sessiondb.turns"]
    assert reason in line and explain_turn(reason) in line
    assert turn.explanation == explain_turn(reason)
    if producer == "user":
        assert "You stopped" in turn.explanation
    else:
        assert "you did not" in turn.explanation


def test_the_first_interrupt_wins_a_watchdog_after_the_person_does_not_rename_the_stop(store, session, tree):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree)
    agent = Agent(turn)
    agent.thread.start()
    assert agent.in_call.wait(30)
    first = turn.request_interrupt("user")
    assert turn.request_interrupt("turn_liveness_watchdog") == first
    agent.thread.join(30)
    assert agent.result.reason == first


def test_a_turn_left_to_finish_is_completed(store, session, tree):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree)
    done = turn.finish()
    assert (done.outcome, done.reason) == ("completed", "completed")
    assert store.transcript(session.id)[-1].uid == done.user_uid


def test_an_error_after_an_interrupt_ends_the_turn_as_the_interrupt(store, session, tree):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree)
    with turn.model_call():
        turn.request_interrupt("user")
    ended = turn.fail(RuntimeError("the HTTP call was cancelled"))
    assert (ended.reason, ended.detail) == ("interrupted_during_api_call", "the HTTP call was cancelled")
    other = AgentTurn.begin(store, session.id, {"role": "user", "content": "again"}, cwd=tree)
    assert other.fail(RuntimeError("model 500")).outcome == "failed"


def test_a_registered_producer_names_itself(store, session, tree):
    register_producer("budget_guard", "The budget guard (the session spent its allowance)")
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree)
    assert turn.request_interrupt("budget_guard") == "interrupted_by_system(budget_guard)"
    assert turn.finish().reason == "interrupted_by_system(budget_guard)"
    assert turn.explanation.startswith("The budget guard")


@pytest.mark.parametrize("producer, phase, reason", [
    ("quota_sentinel", "in_tool", "interrupted_by_system(unregistered:quota_sentinel)"),
    ("quota_sentinel", "in_call", "interrupted_during_api_call(unregistered:quota_sentinel)"),
    ("Quota Sentinel!", "in_tool", "interrupted_by_system(unregistered)"),
])
def test_an_interrupt_from_a_producer_nobody_registered_still_stops_the_turn_and_says_so(
        store, session, tree, caplog, isolated_home, producer, phase, reason):
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "tidy the tree"}, cwd=tree)
    agent = Agent(turn)
    agent.thread.start()
    if phase == "in_tool":
        agent.answer.set()
    assert getattr(agent, phase).wait(30)
    with caplog.at_level(logging.INFO, logger="sessiondb.turns"):
        expired = threading.Event()
        dog = watchdog(turn, producer, expired)
        expired.set()
        dog.join(30)
        agent.thread.join(30)
    assert not agent.thread.is_alive(), "the turn kept running"
    with open_store(home=isolated_home) as again:
        stored = again.get_turn(turn.id)
    assert (stored.outcome, stored.reason) == ("interrupted", reason)
    warning, ended = [r for r in caplog.records if r.name == "sessiondb.turns"]
    assert warning.levelno == logging.WARNING
    assert "nobody registered" in warning.getMessage() and repr(producer) in warning.getMessage()
    assert reason in ended.getMessage() and explain_turn(reason) in ended.getMessage()
    assert "nobody registered" in turn.explanation and "you did not" in turn.explanation


def test_unregistered_is_not_a_name_a_producer_can_take(store, session, tree):
    with pytest.raises(InvalidInput):
        register_producer("unregistered", "Someone")
    turn = AgentTurn.begin(store, session.id, {"role": "user", "content": "go"}, cwd=tree)
    assert turn.request_interrupt("unregistered") == "interrupted_by_system(unregistered:unregistered)"


def test_a_turn_starts_with_a_user_message(store, session, tree):
    with pytest.raises(InvalidInput):
        AgentTurn.begin(store, session.id, {"role": "assistant", "content": "hi"}, cwd=tree)
    assert store.transcript(session.id) == [] and store.turns(session.id) == []
