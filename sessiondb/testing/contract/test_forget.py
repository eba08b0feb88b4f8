"""Erasure, on every backend (S-55): forget removes a person's conversations whole (their
compression chain and the branches taken from them), with everything stored for them, and
nobody else's; its receipt says what went, and nothing matching is a receipt, not an error.
The raw-file scan is tested on a file store (tests/reliability/test_forget_scan.py)."""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput, NotFound

from .test_meaning import Concepts

MARK = "zqxforgotten"


def said(text, **extra):
    return {"role": "user", "content": text, **extra}


def rotate(store, session_id, text):
    lease = store.begin_compaction(session_id)
    return store.commit_compaction(lease, {"role": "system", "content": text}, mode="rotate")


@pytest.fixture
def people(store):
    """Alice's conversation (rotated once, with a branch), and Bob's."""
    alice = store.create_session("telegram", user_id="alice", title="Alice's plans")
    store.append(alice.id, [said(f"{MARK} alice tells her secret number {i}", uid=f"a{i}") for i in range(4)])
    store.record_usage(alice.id, model="m", input_tokens=10)
    store.begin_turn(alice.id, user_uid="a0")
    tip = rotate(store, alice.id, f"{MARK} summary of alice's secrets")
    store.append(tip.id, said(f"{MARK} alice after the summary", uid="a9"))
    branch = store.branch(tip.id, store.transcript(tip.id)[-1].id)
    bob = store.create_session("telegram", user_id="bob")
    store.append(bob.id, said("bob keeps his own words", uid="b0"))
    return {"alice": [alice.id, tip.id, branch.id], "bob": bob.id}


def test_forgetting_a_user_removes_their_whole_conversation_and_nobody_elses(store, people):
    receipt = store.forget(user_id="alice")
    assert receipt.sessions == sorted(people["alice"])
    assert receipt.messages >= 6 and receipt.usage_rows == 1 and receipt.turns == 1
    assert store.search(MARK) == [] and store.recall(f"{MARK} secret") == []
    for sid in people["alice"]:
        with pytest.raises(NotFound):
            store.get_session(sid)
    assert [m.uid for m in store.transcript(people["bob"])] == ["b0"]
    assert [h.uid for h in store.search("bob")] == ["b0"]
    assert receipt.clean and "no copy remains" in receipt.summary()


def test_forgetting_a_session_takes_the_conversation_it_belongs_to_and_its_branches(store, people):
    alice, tip, branch = people["alice"]
    receipt = store.forget(session_id=tip)
    assert receipt.sessions == sorted([alice, tip, branch])
    assert store.search(MARK) == []


def test_forgetting_a_branch_leaves_the_conversation_it_was_taken_from(store, people):
    alice, tip, branch = people["alice"]
    receipt = store.forget(session_id=branch)
    assert receipt.sessions == [branch]
    assert store.get_session(tip).id == tip


def test_every_selector_given_must_match(store, people):
    assert store.forget(user_id="alice", source="cli").sessions == []
    assert store.forget(user_id="alice", source="telegram").sessions == sorted(people["alice"])


def test_before_takes_only_conversations_wholly_inactive_by_then(store, clock):
    old = store.create_session("cli", user_id="carol")
    store.append(old.id, said(f"{MARK} long ago", uid="old"))
    clock.advance(3600)
    going_on = store.create_session("cli", user_id="carol")
    store.append(going_on.id, said(f"{MARK} an hour ago", uid="early"))
    cutoff = clock.now + 60
    clock.advance(7200)
    store.append(going_on.id, said(f"{MARK} still talking", uid="late"))
    assert store.forget(before=cutoff).sessions == [old.id]
    assert {h.uid for h in store.search(MARK)} == {"early", "late"}


def test_a_dry_run_says_what_would_go_and_removes_nothing(store, people):
    receipt = store.forget(user_id="alice", dry_run=True)
    assert receipt.dry_run and receipt.sessions == sorted(people["alice"]) and receipt.messages >= 6
    assert (receipt.usage_rows, receipt.turns) == (1, 1)
    assert "would remove" in receipt.summary()
    assert len(store.search(MARK)) >= 6


def test_forgetting_someone_unknown_is_a_receipt_that_nothing_matched(store, people):
    receipt = store.forget(user_id="nobody")
    assert receipt.sessions == [] and receipt.summary() == "nothing matched: no session was removed"


@pytest.mark.parametrize("asked", [{}, {"user_id": None}, {"user_id": 5}, {"before": "yesterday"},
                                   {"user_id": "x\x00y"}, {"user_id": "alice", "dry_run": "yes"}])
def test_a_forget_that_names_nobody_or_names_badly_is_refused_before_anything_goes(store, people, asked):
    with pytest.raises(InvalidInput):
        store.forget(**asked)
    assert len(store.search(MARK)) >= 6


def test_forgetting_again_finds_nothing_more(store, people):
    store.forget(user_id="alice")
    assert store.forget(user_id="alice").sessions == []


def test_a_forgotten_message_is_never_recalled_by_its_meaning(open_backend):
    store = open_backend(embedder=Concepts())
    gone = store.create_session("cli", user_id="dave")
    kept = store.create_session("cli", user_id="erin")
    store.append(gone.id, said("I adopted a puppy last week", uid="puppy"))
    store.append(kept.id, said("My sister plays the violin", uid="violin"))
    assert store.recall("Which pet do I have?")[0].uid == "puppy"
    store.forget(user_id="dave")
    assert [h.uid for h in store.recall("Which pet do I have?")] in ([], ["violin"])


def test_a_receipt_says_so_when_the_texts_were_too_short_to_scan_for(store):
    s = store.create_session("cli", user_id="zed")
    store.append(s.id, said("hi there"))
    receipt = store.forget(user_id="zed")
    assert receipt.sessions == [s.id] and receipt.fragments == 0
    assert "no scan vouches for them" in receipt.summary() and "no copy remains" not in receipt.summary()
