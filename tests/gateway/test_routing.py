"""The store from the key, the one routing index, lineage, legacy rows and activity (S-08, S-09, S-30..S-32, S-36).

The routing index itself is tested on every backend in sessiondb/testing/contract/test_routing.py;
these tests are the gateway's use of it.
"""

from __future__ import annotations

import threading
import time

import pytest

from sessiondb import keys, open_store
from sessiondb.errors import InvalidInput, StoreClosed
from sessiondb.gateway import Gateway, NoRoutingIndex, OwnerUnavailable, owners

from .conftest import all_texts, make_profile, texts


def test_each_key_is_written_to_the_store_its_profile_names(home, gateway):
    make_profile(home, "work")
    main_key = keys.build("main", "telegram", "dm", "1")
    work_key = keys.build("work", "telegram", "group", "-100")
    gateway.append(main_key, {"role": "user", "content": "to main"})
    gateway.append(work_key, {"role": "user", "content": "to work"})
    with open_store(home=home) as root, open_store(home=home, profile="work") as work:
        assert all_texts(root) == ["to main"]
        assert all_texts(work) == ["to work"]
        assert work.get_session(gateway.session_for(work_key).id).profile == "work"


def test_the_routing_index_lives_in_the_gateways_own_store_for_every_profile(home, gateway):
    make_profile(home, "work")
    key = keys.build("work", "slack", "dm", "U1")
    session = gateway.session_for(key)
    with open_store(home=home) as root, open_store(home=home, profile="work") as work:
        route = root.routing.get(key)
        assert (route.session_id, route.profile, route.state) == (session.id, "work", "idle")
        assert work.routing.entries() == []


def test_a_profile_without_a_home_gets_no_store_and_no_directory(home, gateway):
    key = keys.build("ghost", "telegram", "dm", "1")
    with pytest.raises(OwnerUnavailable):
        gateway.session_for(key)
    result = gateway.append(key, {"role": "user", "content": "waiting"})
    assert result.deferred and not result.stored
    assert not (home / "profiles" / "ghost").exists()
    with open_store(home=home) as root:
        assert all_texts(root) == []


def test_an_invalid_profile_in_a_key_waits_and_never_reaches_the_root_store(home, gateway):
    key = "agent:Bad%0AName:telegram:dm:1"
    result = gateway.append(key, {"role": "user", "content": "nowhere yet"})
    assert result.deferred
    with open_store(home=home) as root:
        assert all_texts(root) == []


def test_without_multiplexing_a_named_profile_is_refused(home):
    make_profile(home, "work")
    with Gateway(home, multiplex_profiles=False) as gw:
        with pytest.raises(InvalidInput):
            gw.session_for(keys.build("work", "telegram", "dm", "1"))
        assert gw.session_for(keys.build("main", "telegram", "dm", "1")).profile is None


def test_concurrent_callers_for_one_key_get_one_session(home, gateway):
    make_profile(home, "work")
    key = keys.build("work", "telegram", "dm", "42")
    results, barrier = [], threading.Barrier(8)

    def call():
        barrier.wait()
        results.append(gateway.session_for(key).id)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1
    with open_store(home=home, profile="work") as work:
        assert work.stats().sessions == 1


def test_a_compaction_child_becomes_the_keys_session_and_the_route_follows(home, gateway):
    key = keys.build("main", "telegram", "dm", "7")
    first = gateway.session_for(key)
    gateway.append(key, [{"role": "user", "content": f"m{i}"} for i in range(4)])
    with open_store(home=home) as store:
        lease = store.begin_compaction(first.id)
        child = store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate")
    result = gateway.append(key, {"role": "user", "content": "after"})
    assert result.stored[0].session_id == child.id
    assert gateway.session_for(key).id == child.id
    with open_store(home=home) as store:
        assert store.routing.get(key).session_id == child.id
        assert texts(store, child.id)[-1] == "after"


def test_a_fresh_gateway_finds_a_rotated_session_by_its_route(home, gateway):
    key = keys.build("main", "telegram", "dm", "8")
    first = gateway.session_for(key)
    gateway.append(key, {"role": "user", "content": "x"})
    with open_store(home=home) as store:
        child = store.commit_compaction(store.begin_compaction(first.id), [{"role": "system", "content": "s"}],
                                        mode="rotate")
    with Gateway(home) as again:
        assert again.session_for(key).id == child.id


def test_two_profiles_with_the_same_dm_peer_never_see_each_others_rows(home, gateway):
    make_profile(home, "alice")
    make_profile(home, "bob")
    a = keys.build("alice", "telegram", "dm", "777")
    b = keys.build("bob", "telegram", "dm", "777")
    for i in range(3):
        gateway.append(a, {"role": "user", "content": f"alice {i}"})
        gateway.append(b, {"role": "user", "content": f"bob {i}"})
    with open_store(home=home, profile="alice") as alice, open_store(home=home, profile="bob") as bob:
        assert all_texts(alice) == ["alice 0", "alice 1", "alice 2"]
        assert all_texts(bob) == ["bob 0", "bob 1", "bob 2"]
        assert bob.search("alice") == [] and alice.search("bob") == []


def test_legacy_rows_are_adopted_only_by_their_owner_profile(home, gateway):
    make_profile(home, "bob")
    with open_store(home=home, profile="bob") as bob:
        foreign = bob.create_session("telegram", profile="alice", chat_type="dm", chat_id="777")
        bob.append(foreign.id, {"role": "user", "content": "alice's old row"})
    key = keys.build("bob", "telegram", "dm", "777")
    session = gateway.session_for(key)
    assert session.id != foreign.id and session.profile == "bob"

    with open_store(home=home, profile="bob") as bob:
        own = bob.create_session("telegram", chat_type="dm", chat_id="555")  # profile: the store's owner
    assert gateway.session_for(keys.build("bob", "telegram", "dm", "555")).id == own.id


def test_a_reset_child_links_its_parent_only_within_one_namespace(home, gateway):
    key = keys.build("main", "telegram", "dm", "9")
    first = gateway.session_for(key)
    with open_store(home=home) as store:
        store.end_session(first.id, "user_reset")
    second = gateway.session_for(key)
    assert second.id != first.id
    assert (second.parent_session_id, second.parent_relation) == (first.id, "reset")


def test_routing_and_turn_marks_never_move_the_activity_clock(home, gateway):
    key = keys.build("main", "telegram", "dm", "10")
    gateway.append(key, {"role": "user", "content": "hello"})
    session_id = gateway.session_for(key).id
    with open_store(home=home) as store:
        before = store.get_session(session_id).last_activity_at
    time.sleep(0.02)
    gateway.turn_started(key)
    gateway.turn_finished(key)
    gateway.recover()
    gateway.append(key, {"role": "user", "content": "note"}, internal=True)
    with open_store(home=home) as store:
        assert store.get_session(session_id).last_activity_at == before


def test_internal_turns_are_marked_and_reach_a_model_as_plain_user_turns(home, gateway):
    key = keys.build("main", "telegram", "dm", "11")
    gateway.append(key, {"role": "assistant", "content": "background job done"}, internal=True)
    session_id = gateway.session_for(key).id
    with open_store(home=home) as store:
        (row,) = store.transcript(session_id)
        assert (row.role, row.display_kind) == ("user", "internal_notification")
        assert store.resume(session_id) == [{"role": "user", "content": "background job done"}]


def test_a_resumed_conversation_appended_through_the_gateway_is_stored_once(home, gateway):
    key = keys.build("main", "telegram", "dm", "12")
    gateway.append(key, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    session_id = gateway.session_for(key).id
    with open_store(home=home) as store:
        conversation = store.resume(session_id)
    gateway.append(key, [*conversation, {"role": "user", "content": "and now?"}])
    with open_store(home=home) as store:
        assert [m.content for m in store.transcript(session_id)] == ["hi", "hello", "and now?"]


def test_bad_input_is_refused_and_never_queued(home, gateway):
    key = keys.build("ghost", "telegram", "dm", "1")
    with pytest.raises(InvalidInput):
        gateway.append(key, {"role": "wizard", "content": "x"})
    assert gateway.status()["profiles"] == {}


class WithoutRouting:
    """A store of a backend without the routing capability: the contract, and nothing more."""

    def __init__(self, store) -> None:
        self._store = store

    def __getattr__(self, name: str):
        if name == "routing":
            raise AttributeError(name)
        return getattr(self._store, name)


def test_a_store_without_a_routing_index_is_refused_by_name_and_nothing_waits(home, monkeypatch):
    opened = []

    def open_plain(**options):
        opened.append(WithoutRouting(open_store(**options)))
        return opened[-1]

    monkeypatch.setattr(owners, "open_store", open_plain)
    key = keys.build("main", "telegram", "dm", "1")
    with Gateway(home) as gw:
        with pytest.raises(NoRoutingIndex, match="needs a store with a routing index"):
            gw.append(key, {"role": "user", "content": "hello"})
        with pytest.raises(NoRoutingIndex):
            gw.recover()
        assert gw.backlog.waiting_keys() == []
    assert opened
    for plain in opened:  # refused stores are closed, not left open
        with pytest.raises(StoreClosed):
            plain.stats()


def test_a_keys_next_batch_is_one_store_call_while_its_session_is_live(home, gateway, monkeypatch):
    key = keys.build("main", "telegram", "dm", "one-call")
    gateway.append(key, {"role": "user", "content": "first"})
    store, made = gateway.owners.resolve(keys.as_key(key)), []
    for name in ("extend", "append", "tip", "get_session", "create_session"):
        monkeypatch.setattr(store, name, lambda *a, _call=getattr(store, name), _name=name, **k:
                            made.append(_name) or _call(*a, **k))
    monkeypatch.setattr(gateway.owners, "index", lambda: pytest.fail("the routing index was read"))
    result = gateway.append(key, {"role": "user", "content": "second"})
    assert made == ["extend"]
    assert texts(store, result.stored[0].session_id) == ["first", "second"]


def test_a_session_ended_elsewhere_sends_the_keys_next_batch_to_a_new_session(home, gateway):
    key = keys.build("main", "telegram", "dm", "ended")
    first = gateway.append(key, {"role": "user", "content": "before"}).stored[0].session_id
    with open_store(home=home) as store:
        store.end_session(first, "user_closed")  # another process closed the conversation
    after = gateway.append(key, {"role": "user", "content": "after"}).stored[0].session_id
    assert after != first
    with open_store(home=home) as store:
        assert texts(store, first) == ["before"]
        assert texts(store, after) == ["after"]
        assert store.routing.get(key).session_id == after
