"""A person's sessions as a scope, on every backend: what is stored for one user is never
listed, searched or recalled for another (`user_id=` on list_sessions, search and recall),
however well it matches, by its words or by its meaning."""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput

from .test_meaning import Concepts


@pytest.fixture
def two(open_backend):
    store = open_backend(embedder=Concepts())
    alice = store.create_session("telegram", user_id="alice")
    bob = store.create_session("telegram", user_id="bob")
    store.append(alice.id, [{"uid": "a-puppy", "role": "user", "content": "I adopted a puppy named Rex"},
                            {"uid": "a-bank", "role": "user", "content": "my bank pin is 1234"}])
    store.append(bob.id, {"uid": "b-violin", "role": "user", "content": "my sister plays the violin"})
    return store, alice.id, bob.id


def test_what_alice_stored_is_never_found_for_bob(two):
    store, alice, bob = two
    assert store.search("bank pin", user_id="bob") == []
    assert store.search("bank pin", user_id="alice")[0].uid == "a-bank"
    assert [h.uid for h in store.recall("Which pet do I have?", user_id="bob")] in ([], ["b-violin"])
    assert store.recall("Which pet do I have?", user_id="alice")[0].uid == "a-puppy"  # by its meaning
    assert store.search("puppy", substring=True, user_id="bob") == []


def test_a_listing_for_one_user_holds_their_sessions_alone(two):
    store, alice, bob = two
    assert [s.id for s in store.list_sessions(user_id="bob").items] == [bob]
    assert store.list_sessions(user_id="carol").items == []
    assert {s.id for s in store.list_sessions().items} == {alice, bob}


def test_a_rotated_conversation_stays_its_user_s(two):
    store, alice, _ = two
    lease = store.begin_compaction(alice)
    tip = store.commit_compaction(lease, {"role": "system", "content": "the gist"}, mode="rotate")
    store.append(tip.id, {"uid": "a-later", "role": "user", "content": "Rex chewed the bank letter"})
    assert {h.uid for h in store.search("bank", user_id="alice")} == {"a-bank", "a-later"}
    assert store.search("bank", user_id="bob") == []


@pytest.mark.parametrize("user_id", [5, "x\x00y", "u" * 10_000])
def test_a_user_that_is_not_a_label_is_refused(two, user_id):
    store = two[0]
    for call in (lambda: store.search("bank", user_id=user_id), lambda: store.recall("bank", user_id=user_id),
                 lambda: store.list_sessions(user_id=user_id)):
        with pytest.raises(InvalidInput):
            call()
