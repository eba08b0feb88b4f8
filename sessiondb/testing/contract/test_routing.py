"""The routing capability (S-08, S-32, S-33, S-36): the index a gateway keeps, on every backend that has one."""

from __future__ import annotations

import pytest

from sessiondb import keys
from sessiondb.errors import InvalidInput
from sessiondb.store.optional import Routable, RouteEntry, RoutingIndex

KEY = keys.build("work", "telegram", "dm", "1")
OTHER = keys.build("main", "slack", "group", "C1", "T1")


@pytest.fixture
def index(store) -> RoutingIndex:
    if not isinstance(store, Routable):  # pragma: no cover - a backend without the capability
        pytest.skip(f"{type(store).__name__} offers no routing index")
    return store.routing


def test_the_store_offers_a_routing_index_through_the_capability(store, index):
    assert isinstance(store, Routable)
    assert isinstance(index, RoutingIndex)


def test_a_put_entry_is_read_back_idle_with_its_owner(store, index):
    session = store.create_session("telegram")
    put = index.put(KEY, session.id, "work")
    got = index.get(KEY)
    assert isinstance(got, RouteEntry)
    assert got == put
    assert (got.key, got.session_id, got.profile, got.state, got.turn_started_at) == (
        KEY, session.id, "work", "idle", None)
    assert got.to_dict()["session_id"] == session.id
    assert index.get(OTHER) is None


def test_a_put_rewrites_the_entry_and_starts_its_turn_idle(store, index):
    first, second = store.create_session("telegram"), store.create_session("telegram")
    index.put(KEY, first.id, "work")
    index.update(KEY, state="running", turn_started_at=1000.0)
    index.put(KEY, second.id, "work")
    got = index.get(KEY)
    assert (got.session_id, got.state, got.turn_started_at) == (second.id, "idle", None)


def test_an_update_changes_only_the_fields_it_names(store, index):
    session, child = store.create_session("telegram"), store.create_session("telegram")
    index.put(KEY, session.id, "work")
    running = index.update(KEY, state="running", turn_started_at=1000.0)
    assert (running.session_id, running.profile, running.state, running.turn_started_at) == (
        session.id, "work", "running", 1000.0)
    moved = index.update(KEY, session_id=child.id)
    assert (moved.session_id, moved.state, moved.turn_started_at) == (child.id, "running", 1000.0)
    assert index.get(KEY) == moved


def test_an_update_against_a_stale_read_changes_nothing(store, index):
    index.put(KEY, store.create_session("telegram").id, "work")
    index.update(KEY, state="running", turn_started_at=1000.0)
    seen = index.get(KEY)
    index.update(KEY, state="idle", turn_started_at=None)  # a live writer moves on
    stale = {"state": seen.state, "turn_started_at": seen.turn_started_at}
    assert index.update(KEY, expect=stale, state="resume_pending") is None
    assert index.get(KEY).state == "idle"
    current = {"state": "idle", "turn_started_at": None}
    assert index.update(KEY, expect=current, state="ended").state == "ended"


def test_an_update_of_an_absent_entry_writes_nothing(index):
    assert index.update(KEY, state="running") is None
    assert index.entries() == []


@pytest.mark.parametrize("call", [
    lambda index: index.update(KEY, colour="red"),
    lambda index: index.update(KEY, expect={"colour": "red"}, state="idle"),
    lambda index: index.update(KEY, state="asleep"),
    lambda index: index.put("", "s1", "work"),
    lambda index: index.put(KEY, "", "work"),
    lambda index: index.get(""),
], ids=["unknown-field", "unknown-expected-field", "unknown-state", "empty-key", "empty-session", "empty-get"])
def test_bad_input_is_refused_and_writes_nothing(store, index, call):
    index.put(OTHER, store.create_session("slack").id, "main")
    before = index.entries()
    with pytest.raises(InvalidInput):
        call(index)
    assert index.entries() == before


def test_entries_are_listed_by_key_and_filtered_by_profile_and_state(store, index):
    sid = store.create_session("telegram").id
    third = keys.build("work", "telegram", "group", "-100")
    for key, profile in ((third, "work"), (KEY, "work"), (OTHER, "main")):
        index.put(key, sid, profile)
    index.update(KEY, state="running", turn_started_at=1000.0)
    assert [r.key for r in index.entries()] == sorted([KEY, OTHER, third])
    assert [r.key for r in index.entries(profile="work")] == sorted([KEY, third])
    assert [r.key for r in index.entries(states=("running", "ended"))] == [KEY]
    assert [r.key for r in index.entries(profile="main", states=("running",))] == []


def test_the_live_session_of_a_key_is_its_most_recently_active_open_one(store, index):
    older = store.create_session("telegram", session_key=KEY)
    newer = store.create_session("telegram", session_key=KEY)
    store.append(older.id, {"role": "user", "content": "a", "timestamp": 1000.0})
    store.append(newer.id, {"role": "user", "content": "b", "timestamp": 2000.0})
    assert index.live_by_key(KEY).id == newer.id
    store.append(older.id, {"role": "user", "content": "c", "timestamp": 3000.0})
    assert index.live_by_key(KEY).id == older.id
    store.end_session(older.id, "user_reset")
    assert index.live_by_key(KEY).id == newer.id
    store.end_session(newer.id, "user_reset")
    assert index.live_by_key(KEY) is None


def test_a_peer_lookup_adopts_only_open_unkeyed_rows_of_the_stores_owner(store, index):
    peer = ("telegram", "dm", "777")
    store.create_session("telegram", profile="alice", chat_type="dm", chat_id="777")  # another bot's DM
    store.create_session("telegram", session_key=KEY, chat_type="dm", chat_id="777")  # keyed: not legacy
    threaded = store.create_session("telegram", chat_type="dm", chat_id="777", thread_id="T1")  # another thread
    ended = store.create_session("telegram", chat_type="dm", chat_id="777")
    store.end_session(ended.id, "user_reset")
    assert index.legacy_by_peer(*peer) is None
    own = store.create_session("telegram", chat_type="dm", chat_id="777")  # this store's owner (main)
    assert index.legacy_by_peer(*peer).id == own.id
    assert index.legacy_by_peer(*peer, "T1").id == threaded.id
    assert index.legacy_by_peer("slack", "dm", "777") is None


def test_routing_writes_never_move_the_activity_clock(store, index):
    session = store.create_session("telegram", session_key=KEY)
    store.append(session.id, {"role": "user", "content": "hello", "timestamp": 1000.0})
    before = store.get_session(session.id)
    index.put(KEY, session.id, "work")
    index.update(KEY, state="running", turn_started_at=5000.0)
    index.update(KEY, state="idle", turn_started_at=None)
    after = store.get_session(session.id)
    assert (after.last_activity_at, after.message_count) == (before.last_activity_at, before.message_count) == (
        1000.0, 1)
