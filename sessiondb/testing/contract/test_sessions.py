"""Sessions through the public Store contract: create, read, list, end, titles, flags,
metadata, delete, and the lifecycle of handles. Every backend must pass these."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

import sessiondb
from sessiondb import Conflict, InvalidInput, NotFound, StoreClosed, TitleConflict


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def all_sessions(store, **filters):
    """Every session a listing yields, following cursors to the end."""
    items, cursor = [], None
    while True:
        page = store.list_sessions(limit=1000, cursor=cursor, **filters)
        items += page.items
        cursor = page.cursor
        if cursor is None:
            return items


def ids(sessions):
    return [s.id for s in sessions]


# --- create and get ---------------------------------------------------------------------


def test_the_store_handle_satisfies_the_store_protocol(store):
    assert isinstance(store, sessiondb.Store)
    assert isinstance(store.location, str) and store.location
    assert store.profile is None


def test_a_created_session_reads_back_with_everything_it_was_given(store):
    parent = store.create_session("cli")
    before = time.time()
    s = store.create_session(
        "gateway",
        session_id="s-1",
        title="Fix the flaky test",
        session_key="agent:main:telegram:dm:42",
        user_id="u42",
        chat_id="c7",
        chat_type="dm",
        thread_id="t9",
        model="gpt-x",
        parent_session_id=parent.id,
        metadata={"lang": "en", "nested": {"a": [1, 2]}},
    )
    after = time.time()
    assert s == store.get_session("s-1")
    assert (s.id, s.source, s.title, s.session_key, s.user_id) == (
        "s-1", "gateway", "Fix the flaky test", "agent:main:telegram:dm:42", "u42")
    assert (s.chat_id, s.chat_type, s.thread_id, s.model, s.parent_session_id) == (
        "c7", "dm", "t9", "gpt-x", parent.id)
    assert s.metadata == {"lang": "en", "nested": {"a": [1, 2]}}
    assert before - 1 <= s.started_at <= after + 1


def test_a_new_session_starts_empty_open_and_unflagged(store):
    s = store.create_session("cli")
    assert s.id
    assert s.message_count == 0 and s.tool_call_count == 0
    assert s.ended_at is None and s.end_reason is None
    assert s.last_activity_at is None
    assert (s.pinned, s.archived, s.hidden) == (False, False, False)
    assert s.metadata == {}
    assert s.title is None


def test_minted_session_ids_are_unique(store):
    made = {store.create_session("cli").id for _ in range(50)}
    assert len(made) == 50


def test_getting_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.get_session("no-such-session")


def test_several_sessions_are_read_in_one_call_by_id_leaving_out_the_unknown(store):
    first, second = store.create_session("cli", title="first"), store.create_session("gateway", title="second")
    found = store.get_sessions([second.id, "no-such-session", first.id, second.id])
    assert list(found) == [second.id, first.id]  # in the order asked, each once
    assert found == {second.id: store.get_session(second.id), first.id: store.get_session(first.id)}
    assert store.get_sessions(iter([])) == {}


@pytest.mark.parametrize("session_ids", ["one-id", [""], [7], ["ok"] * 1001], ids=["text", "empty id", "not text",
                                                                                   "too many"])
def test_reading_several_sessions_by_bad_ids_raises_invalid_input(store, session_ids):
    with pytest.raises(InvalidInput):
        store.get_sessions(session_ids)


def test_several_messages_are_read_in_one_call_by_id_wherever_they_are_leaving_out_rewound_and_unknown(store):
    one, two = store.create_session("cli"), store.create_session("cli")
    a, b = store.append(one.id, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    c, undone = store.append(two.id, [{"role": "user", "content": "c"}, {"role": "assistant", "content": "undone"}])
    store.rewind(two.id, c.id)
    lease = store.begin_compaction(one.id)
    store.commit_compaction(lease, {"role": "system", "content": "summary"})  # archives a and b
    found = store.get_messages([c.id, undone.id, 10**9, a.id, c.id, b.id])
    assert list(found) == [c.id, a.id, b.id]  # in the order asked, each once
    assert found[c.id] == c
    assert [(m.uid, m.content, m.state) for m in (found[a.id], found[b.id])] == [
        (a.uid, "a", "compacted"), (b.uid, "b", "compacted")]
    assert store.get_messages([]) == {}


@pytest.mark.parametrize("message_ids", [7, ["7"], [-1], [True], [1, 2**63], list(range(1001))],
                         ids=["not a list", "text", "negative", "a flag", "past 64 bits", "too many"])
def test_reading_several_messages_by_bad_ids_raises_invalid_input(store, message_ids):
    with pytest.raises(InvalidInput):
        store.get_messages(message_ids)


def test_creating_a_session_with_a_taken_id_is_refused_and_changes_nothing(store):
    first = store.create_session("cli", session_id="dup", title="first")
    with pytest.raises(sessiondb.Conflict):
        store.create_session("gateway", session_id="dup", title="second")
    assert store.get_session("dup") == first
    assert ids(all_sessions(store)) == ["dup"]


def test_a_child_session_needs_an_existing_parent(store):
    with pytest.raises(NotFound):
        store.create_session("cli", parent_session_id="missing-parent")
    assert all_sessions(store) == []


@pytest.mark.parametrize(
    "kwargs",
    [
        {"source": ""},
        {"source": "   "},
        {"source": None},
        {"source": 7},
        {"source": "x" * 201},
        {"source": "cli", "metadata": ["not", "a", "mapping"]},
        {"source": "cli", "metadata": {"s": {1, 2}}},
        {"source": "cli", "metadata": {"nan": float("nan")}},
        {"source": "cli", "metadata": {"o": object()}},
        {"source": "cli", "title": 5},
        {"source": "cli", "title": "t" * 101},
        {"source": "cli", "model": 3.5},
        {"source": "cli", "chat_id": "a\x00b"},
        {"source": "cli", "profile": "../escape"},
        {"source": "cli", "started_at": "yesterday"},
        {"source": "cli", "started_at": float("nan")},
        {"source": "cli", "started_at": datetime(2026, 1, 1)},  # naive: no zone to place it in
        {"source": "cli", "started_at": 1e12},  # past the year 9999
    ],
)
def test_creating_a_session_from_bad_input_raises_invalid_input_and_writes_nothing(store, kwargs):
    kwargs = dict(kwargs)  # the parameter is shared by every backend's run of this test
    source = kwargs.pop("source")
    with pytest.raises(InvalidInput):
        store.create_session(source, **kwargs)
    assert all_sessions(store, include_archived=True, include_hidden=True) == []


def test_a_session_brought_in_from_elsewhere_starts_when_its_source_says(store):
    began = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc)
    s = store.create_session("codex", started_at=began)
    assert store.get_session(s.id).started_at == began.timestamp()
    assert store.create_session("codex", started_at=1_700_000_000).started_at == 1_700_000_000.0


def test_a_session_can_name_another_profile(store):
    s = store.create_session("cli", profile="work")
    assert store.get_session(s.id).profile == "work"


# --- listing ----------------------------------------------------------------------------


def test_listing_puts_the_most_recent_activity_first(store):
    a = store.create_session("cli", session_id="a")
    b = store.create_session("cli", session_id="b")
    c = store.create_session("cli", session_id="c")
    # Without activity, sessions sort by when they started.
    assert ids(store.list_sessions().items) == ["c", "b", "a"]
    store.append(a.id, user("hello", timestamp=time.time() + 100))
    assert ids(store.list_sessions().items) == ["a", "c", "b"]
    store.append(b.id, user("later", timestamp=time.time() + 200))
    assert ids(store.list_sessions().items) == ["b", "a", "c"]
    assert c.id in ids(store.list_sessions().items)


def test_listing_filters_by_source(store):
    for i in range(3):
        store.create_session("cli", session_id=f"cli-{i}")
    for i in range(2):
        store.create_session("gateway", session_id=f"gw-{i}")
    assert sorted(ids(store.list_sessions(source="gateway").items)) == ["gw-0", "gw-1"]
    assert sorted(ids(store.list_sessions(source="cli").items)) == ["cli-0", "cli-1", "cli-2"]
    assert store.list_sessions(source="desktop").items == []
    assert len(store.list_sessions().items) == 5


def test_listing_filters_by_pinned(store):
    for name in ("p1", "p2", "u1"):
        store.create_session("cli", session_id=name)
    store.set_flags("p1", pinned=True)
    store.set_flags("p2", pinned=True)
    assert sorted(ids(store.list_sessions(pinned=True).items)) == ["p1", "p2"]
    assert ids(store.list_sessions(pinned=False).items) == ["u1"]
    assert len(store.list_sessions().items) == 3


def test_archived_and_hidden_sessions_are_listed_only_when_asked_for(store):
    for name in ("plain", "arch", "hid", "both"):
        store.create_session("cli", session_id=name)
    store.set_flags("arch", archived=True)
    store.set_flags("hid", hidden=True)
    store.set_flags("both", archived=True, hidden=True)
    assert ids(store.list_sessions().items) == ["plain"]
    assert sorted(ids(store.list_sessions(include_archived=True).items)) == ["arch", "plain"]
    assert sorted(ids(store.list_sessions(include_hidden=True).items)) == ["hid", "plain"]
    assert sorted(ids(store.list_sessions(include_archived=True, include_hidden=True).items)) == [
        "arch", "both", "hid", "plain"]


def test_a_session_created_hidden_is_hidden_from_its_first_write_and_shown_when_asked_for(store):
    made = store.create_session("cli", session_id="home", hidden=True)
    assert made.hidden and store.get_session("home").hidden
    assert ids(store.list_sessions().items) == []
    assert ids(store.list_sessions(include_hidden=True).items) == ["home"]
    assert store.set_flags("home", hidden=False).hidden is False
    # extend creates a missing session with create_session's arguments, hidden among them.
    store.extend("state", lambda *_: [], create={"source": "cli", "hidden": True})
    assert store.get_session("state").hidden
    assert not store.create_session("cli").hidden


def test_a_hidden_creation_is_refused_for_a_compression_continuation_and_for_a_flag_that_is_not_one(store):
    store.create_session("cli", session_id="root")
    with pytest.raises(InvalidInput, match="conversation's flags"):
        store.create_session("cli", session_id="next", parent_session_id="root", parent_relation="compression",
                             hidden=True)
    with pytest.raises(InvalidInput, match="hidden must be true or false"):
        store.create_session("cli", session_id="odd", hidden="yes")
    assert ids(store.list_sessions(include_hidden=True).items) == ["root"]


def test_listing_filters_by_activity_time_with_since_and_until(store):
    base = time.time() + 1000
    for name, offset in (("s1", 100), ("s2", 200), ("s3", 300)):
        store.create_session("cli", session_id=name)
        store.append(name, user(name, timestamp=base + offset))
    assert ids(store.list_sessions(since=base + 150).items) == ["s3", "s2"]
    assert ids(store.list_sessions(until=base + 250).items) == ["s2", "s1"]
    assert ids(store.list_sessions(since=base + 150, until=base + 250).items) == ["s2"]
    aware = datetime.fromtimestamp(base + 250, tz=timezone.utc)
    assert ids(store.list_sessions(since=aware).items) == ["s3"]
    assert store.list_sessions(since=base + 400).items == []


def test_a_naive_datetime_bound_is_refused(store):
    with pytest.raises(InvalidInput):
        store.list_sessions(since=datetime(2026, 1, 1))


def _page_through(store, limit, **filters):
    seen, cursor, pages = [], None, 0
    while True:
        page = store.list_sessions(limit=limit, cursor=cursor, **filters)
        assert len(page.items) <= limit
        seen += page.items
        pages += 1
        cursor = page.cursor
        if cursor is None:
            return seen, pages
        assert len(page.items) == limit  # only the last page may be short
        assert pages < 100, "the cursor never ends"


def test_cursor_paging_visits_every_session_once_in_order_across_pages(store):
    for i in range(23):
        store.create_session("cli", session_id=f"s{i:02d}")
    full = store.list_sessions(limit=1000).items
    assert len(full) == 23
    seen, pages = _page_through(store, limit=5)
    assert pages == 5
    assert ids(seen) == ids(full)
    assert len(set(ids(seen))) == 23


def test_cursor_paging_has_no_repeats_or_gaps_when_activity_times_tie(store):
    tie = time.time() + 500
    for i in range(17):
        store.create_session("cli", session_id=f"t{i:02d}")
        # Ten of them share one activity instant; the rest are spread around it.
        stamp = tie if i % 5 != 0 else tie + i - 8
        store.append(f"t{i:02d}", user("x", timestamp=stamp))
    full = store.list_sessions(limit=1000).items
    for limit in (1, 2, 3, 4, 7):
        seen, _ = _page_through(store, limit=limit)
        assert ids(seen) == ids(full), f"limit {limit}"
    activity = [s.last_activity_at for s in full]
    assert activity == sorted(activity, reverse=True)


def test_listing_and_paging_keep_the_exact_activity_order_across_minutes_and_within_one(store):
    """A backend may order by a coarser key first (PostgreSQL: the activity's minute); the
    order and the pages must still be those of the exact time, ties broken by id."""
    minute = 1_800_000_000.0  # a minute's first second
    stamps = [minute + offset for offset in (59.9, 60.0, 0.5, 119.0, 60.1, 60.0, 0.0, 59.9, 180.25, 61.0, 120.0)]
    for i, stamp in enumerate(stamps):
        store.create_session("cli", session_id=f"m{i:02d}")
        store.append(f"m{i:02d}", user("x", timestamp=stamp))
    expected = [f"m{i:02d}" for _, i in sorted(((stamp, i) for i, stamp in enumerate(stamps)), reverse=True)]
    assert ids(store.list_sessions(limit=1000).items) == expected
    for limit in (1, 2, 3, 5):
        seen, _ = _page_through(store, limit=limit)
        assert ids(seen) == expected, f"limit {limit}"


def test_since_and_until_bounds_inside_one_minute_keep_exactly_the_sessions_between(store):
    minute = 1_800_000_000.0  # a minute's first second
    for offset in (10.0, 30.0, 50.0, 70.0):
        store.create_session("cli", session_id=f"at{offset:.0f}")
        store.append(f"at{offset:.0f}", user("x", timestamp=minute + offset))
    assert ids(all_sessions(store, since=minute + 30.0)) == ["at70", "at50", "at30"]
    assert ids(all_sessions(store, until=minute + 50.0)) == ["at30", "at10"]
    assert ids(all_sessions(store, since=minute + 30.0, until=minute + 50.0)) == ["at30"]


def test_cursor_paging_keeps_the_filters(store):
    for i in range(12):
        store.create_session("cli" if i % 3 else "gateway", session_id=f"f{i:02d}")
    seen, _ = _page_through(store, limit=2, source="cli")
    assert sorted(ids(seen)) == sorted(f"f{i:02d}" for i in range(12) if i % 3)


def test_a_session_created_while_paging_is_not_repeated(store):
    for i in range(6):
        store.create_session("cli", session_id=f"o{i}")
    first = store.list_sessions(limit=3)
    store.create_session("cli", session_id="newcomer")
    second = store.list_sessions(limit=3, cursor=first.cursor)
    assert set(ids(first.items)).isdisjoint(ids(second.items))
    assert sorted(ids(first.items) + ids(second.items)) == [f"o{i}" for i in range(6)]


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 2.5, "10"])
def test_listing_with_an_out_of_range_limit_is_refused(store, limit):
    with pytest.raises(InvalidInput):
        store.list_sessions(limit=limit)


@pytest.mark.parametrize("cursor", ["garbage", "", "W10=", 12])
def test_listing_with_a_cursor_the_store_did_not_hand_out_is_refused(store, cursor):
    store.create_session("cli")
    with pytest.raises(InvalidInput):
        store.list_sessions(cursor=cursor)


# --- end and reopen -----------------------------------------------------------------------


def test_ending_a_session_records_when_and_why(store):
    s = store.create_session("cli")
    before = time.time()
    ended = store.end_session(s.id, "user_exit")
    assert ended.end_reason == "user_exit"
    assert before - 1 <= ended.ended_at <= time.time() + 1
    assert store.get_session(s.id) == ended


def test_ending_twice_keeps_the_first_end_time(store, clock):
    s = store.create_session("cli")
    first = store.end_session(s.id, "timeout")
    clock.advance(10)
    second = store.end_session(s.id, "user_exit")
    assert second.ended_at == first.ended_at != clock.now


def test_reopening_a_session_clears_its_end(store):
    s = store.create_session("cli")
    store.end_session(s.id, "timeout")
    reopened = store.reopen_session(s.id)
    assert reopened.ended_at is None and reopened.end_reason is None
    assert store.get_session(s.id) == reopened
    # A reopened session can end again, with a fresh time.
    again = store.end_session(s.id, "done")
    assert again.ended_at is not None and again.end_reason == "done"


def test_ending_or_reopening_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.end_session("ghost", "x")
    with pytest.raises(NotFound):
        store.reopen_session("ghost")


@pytest.mark.parametrize("reason", ["", "   ", None, 5])
def test_ending_without_a_reason_is_refused(store, reason):
    s = store.create_session("cli")
    with pytest.raises(InvalidInput):
        store.end_session(s.id, reason)
    assert store.get_session(s.id).ended_at is None


# --- titles -------------------------------------------------------------------------------


def test_titles_are_sanitised(store):
    s = store.create_session("cli", title="  Fix\tthe \n flaky\u202e test\x00  ")
    assert s.title == "Fix the flaky test"
    t = store.set_title(s.id, "\u200bZero\u200b width\ufeff and  bidi \u2066here\u2069")
    assert t.title == "Zero width and bidi here"
    assert store.get_session(s.id).title == "Zero width and bidi here"


def test_a_title_used_by_another_session_raises_title_conflict(store):
    a = store.create_session("cli", title="Shared name")
    b = store.create_session("cli")
    with pytest.raises(TitleConflict):
        store.set_title(b.id, "Shared name")
    # Titles that sanitise to the same text are the same title.
    with pytest.raises(TitleConflict):
        store.set_title(b.id, "  Shared\t\tname ")
    assert store.get_session(b.id).title is None
    assert store.get_session(a.id).title == "Shared name"


def test_creating_a_session_with_a_taken_title_creates_nothing(store):
    store.create_session("cli", session_id="owner", title="Taken")
    with pytest.raises(TitleConflict):
        store.create_session("cli", session_id="late", title="Taken")
    with pytest.raises(NotFound):
        store.get_session("late")


def test_title_conflict_is_a_conflict(store):
    assert issubclass(TitleConflict, sessiondb.Conflict)


def test_a_session_may_set_its_own_title_again(store):
    s = store.create_session("cli", title="Mine")
    assert store.set_title(s.id, "Mine").title == "Mine"


def test_a_title_over_100_characters_is_refused_and_the_old_title_kept(store):
    s = store.create_session("cli", title="Short")
    with pytest.raises(InvalidInput):
        store.set_title(s.id, "x" * 101)
    assert store.get_session(s.id).title == "Short"
    assert store.set_title(s.id, "y" * 100).title == "y" * 100


def test_a_long_title_that_sanitises_to_100_characters_is_accepted(store):
    s = store.create_session("cli")
    assert store.set_title(s.id, "   " + "z" * 100 + "\n\t").title == "z" * 100


@pytest.mark.parametrize("blank", [None, "", "   ", "\t\n", "\u200b\u202e"])
def test_a_blank_title_clears_the_title(store, blank):
    s = store.create_session("cli", title="Something")
    assert store.set_title(s.id, blank).title is None
    assert store.get_session(s.id).title is None


def test_a_cleared_title_is_free_for_another_session(store):
    a = store.create_session("cli", title="Reusable")
    b = store.create_session("cli")
    store.set_title(a.id, None)
    assert store.set_title(b.id, "Reusable").title == "Reusable"


def test_many_sessions_may_have_no_title(store):
    for _ in range(5):
        store.create_session("cli", title="   ")
    assert all(s.title is None for s in store.list_sessions().items)


def test_setting_the_title_of_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.set_title("ghost", "Anything")


# --- flags and metadata -------------------------------------------------------------------


def test_set_flags_sets_only_the_flags_given(store):
    s = store.create_session("cli")
    assert store.set_flags(s.id, pinned=True).pinned is True
    both = store.set_flags(s.id, archived=True)
    assert (both.pinned, both.archived, both.hidden) == (True, True, False)
    cleared = store.set_flags(s.id, pinned=False, hidden=True)
    assert (cleared.pinned, cleared.archived, cleared.hidden) == (False, True, True)
    assert store.set_flags(s.id) == cleared
    assert store.get_session(s.id) == cleared


@pytest.mark.parametrize("value", [1, 0, "yes", "true"])
def test_flags_must_be_booleans(store, value):
    s = store.create_session("cli")
    with pytest.raises(InvalidInput):
        store.set_flags(s.id, pinned=value)
    assert store.get_session(s.id).pinned is False


def test_setting_flags_on_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.set_flags("ghost", pinned=True)


def test_update_metadata_merges_and_none_removes_a_key(store):
    s = store.create_session("cli", metadata={"keep": 1, "drop": "x", "change": [1]})
    updated = store.update_metadata(s.id, {"drop": None, "change": {"to": "dict"}, "new": "é"})
    assert updated.metadata == {"keep": 1, "change": {"to": "dict"}, "new": "é"}
    assert store.get_session(s.id).metadata == updated.metadata
    # Removing a key that is not there is fine.
    assert store.update_metadata(s.id, {"never-was": None}).metadata == updated.metadata


@pytest.mark.parametrize(
    "patch",
    [{"s": {1, 2}}, {"o": object()}, {"n": float("nan")}, {"i": float("inf")}, ["not", "mapping"], "text", None],
)
def test_update_metadata_with_bad_input_raises_invalid_input_and_changes_nothing(store, patch):
    s = store.create_session("cli", metadata={"a": 1})
    with pytest.raises(InvalidInput):
        store.update_metadata(s.id, patch)
    assert store.get_session(s.id).metadata == {"a": 1}


def test_updating_metadata_of_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.update_metadata("ghost", {"a": 1})


def test_background_writes_never_move_last_activity(store):
    """S-08: metadata, flags, titles, ends and usage are not user activity."""
    store.create_session("cli", session_id="quiet")
    busy = store.create_session("cli", session_id="busy")
    stamp = time.time() + 50
    store.append(busy.id, user("hi", timestamp=stamp))
    store.create_session("cli", session_id="newest")
    order = ids(store.list_sessions().items)
    assert order == ["busy", "newest", "quiet"]
    for sid in ("quiet", "busy"):
        before = store.get_session(sid).last_activity_at
        store.update_metadata(sid, {"compaction": {"repointed": True}})
        store.update_metadata(sid, {"compaction": None})
        store.set_flags(sid, pinned=True)
        store.set_flags(sid, pinned=False)
        store.set_title(sid, f"title {sid}")
        store.end_session(sid, "timeout")
        store.reopen_session(sid)
        store.record_usage(sid, model="m", input_tokens=5)
        assert store.get_session(sid).last_activity_at == before
    assert store.get_session("busy").last_activity_at == stamp
    assert store.get_session("quiet").last_activity_at is None
    assert ids(store.list_sessions().items) == order


# --- delete -------------------------------------------------------------------------------


def test_deleting_a_session_removes_it_with_its_messages_usage_and_routing_entries(store):
    s = store.create_session("cli", session_id="doomed", title="Doomed")
    store.append(s.id, [user("one", uid="u1"), {"role": "assistant", "content": "two", "uid": "u2"}])
    store.record_usage(s.id, model="m", input_tokens=10)
    store.routing.put("agent:main:cli:dm:doomed", s.id, "main")
    keeper = store.create_session("cli")
    store.append(keeper.id, user("kept", uid="u1"))
    store.routing.put("agent:main:cli:dm:kept", keeper.id, "main")

    assert store.delete_session(s.id) == [s.id]

    # A gateway never routes a key to the removed session (as for a prune or a sweep).
    assert store.routing.get("agent:main:cli:dm:doomed") is None
    assert store.routing.get("agent:main:cli:dm:kept").session_id == keeper.id

    with pytest.raises(NotFound):
        store.get_session(s.id)
    with pytest.raises(NotFound):
        store.transcript(s.id)
    with pytest.raises(NotFound):
        store.usage(s.id)
    assert ids(all_sessions(store)) == [keeper.id]
    # A new session under the same id and title starts from nothing.
    again = store.create_session("cli", session_id="doomed", title="Doomed")
    assert again.message_count == 0
    assert store.transcript("doomed") == []
    assert store.usage("doomed").calls == 0 and store.usage("doomed").rows == ()
    # The uids are free again: appending them stores new rows.
    assert [m.content for m in store.append("doomed", user("fresh", uid="u1"))] == ["fresh"]
    # The other session is untouched.
    assert [m.content for m in store.transcript(keeper.id)] == ["kept"]


def test_deleting_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.delete_session("ghost")
    with pytest.raises(NotFound):
        store.delete_session("ghost", conversation=True)
    with pytest.raises(InvalidInput, match="conversation"):
        store.delete_session("ghost", conversation="yes")


def _rotated(store, sid):
    lease = store.begin_compaction(sid)
    return store.commit_compaction(lease, [user("summary")], mode="rotate").id


def test_a_conversation_is_deleted_whole_from_any_of_its_sessions_and_its_branches_stay(store):
    root = store.create_session("cli", session_id="chat").id
    store.append(root, user("first"))
    middle = _rotated(store, root)
    [kept] = store.append(middle, user("second"))
    branch = store.branch(middle, kept.id).id
    tip = _rotated(store, middle)
    other = store.create_session("cli").id

    assert store.delete_session(middle, conversation=True) == [middle, *sorted({root, tip})]  # every id deleted

    assert set(ids(all_sessions(store))) == {branch, other}
    for gone in (root, middle, tip):
        with pytest.raises(NotFound):
            store.get_session(gone)
    assert store.get_session(branch).parent_session_id is None  # a branch is a conversation of its own
    assert [m.content for m in store.transcript(branch)] == ["summary", "second"]
    assert store.verify().ok


def test_a_hold_on_one_session_of_a_conversation_refuses_its_whole_delete(store):
    root = store.create_session("cli").id
    store.append(root, user("first"))
    tip = _rotated(store, root)
    store.hold(session_id=tip, reason="litigation")
    with pytest.raises(Conflict, match="hold"):
        store.delete_session(root, conversation=True)
    assert store.get_session(root) and store.get_session(tip)  # nothing was deleted


# --- finding a session by what a person types ----------------------------------------------


def test_a_session_is_found_by_its_id_its_title_or_a_unique_id_prefix(store):
    trip = store.create_session("cli", session_id="20260101_120000_aaaa", title="Trip to Kyoto")
    store.create_session("cli", session_id="20260101_130000_bbbb")
    assert store.find_session("20260101_120000_aaaa") == trip
    assert store.find_session("Trip to Kyoto") == trip
    assert store.find_session("20260101_12") == trip
    assert store.find_session("  Trip to Kyoto  ") == trip  # as typed, spaces around


def test_a_title_is_found_in_another_case_of_ascii_letters_only_when_one_session_has_it(store):
    trip = store.create_session("cli", title="Trip to Kyoto")
    assert store.find_session("trip TO kyoto") == trip
    store.create_session("cli", title="Été à Kyoto")
    with pytest.raises(NotFound):
        store.find_session("ÉTÉ À KYOTO")  # only ASCII letters fold: É is not é
    store.create_session("cli", title="TRIP TO KYOTO")
    with pytest.raises(NotFound):
        store.find_session("trip to kyoto")  # two sessions have it in other cases: neither is meant


def test_an_id_prefix_is_exact_and_an_ambiguous_one_names_the_candidates(store):
    for sid in ("run_1", "run_2", "run%3"):
        store.create_session("cli", session_id=sid)
    with pytest.raises(InvalidInput, match="run_1, run_2"):
        store.find_session("run_")
    assert store.find_session("run%").id == "run%3"  # no pattern characters
    with pytest.raises(NotFound):
        store.find_session("ru_")


# --- handles ------------------------------------------------------------------------------


def test_reopening_the_store_keeps_everything(store, open_backend):
    s = store.create_session("cli", title="Persisted", metadata={"k": "v"})
    store.set_flags(s.id, pinned=True)
    store.append(s.id, [user("a", uid="1"), {"role": "assistant", "content": [{"type": "text", "text": "b"}], "uid": "2"}])
    store.record_usage(s.id, model="m", provider="p", input_tokens=3, cost_usd=0.5)
    store.end_session(s.id, "done")
    session, transcript, usage = store.get_session(s.id), store.transcript(s.id), store.usage(s.id)
    store.close()

    again = open_backend()
    assert again.get_session(s.id) == session
    assert again.transcript(s.id) == transcript
    assert again.usage(s.id) == usage
    assert again.list_sessions().items == [session]


def test_close_is_idempotent(open_backend):
    s = open_backend()
    s.close()
    s.close()
    with s:
        pass  # __exit__ closes again: still fine


@pytest.mark.parametrize(
    "call",
    [
        lambda s, sid: s.create_session("cli"),
        lambda s, sid: s.get_session(sid),
        lambda s, sid: s.list_sessions(),
        lambda s, sid: s.end_session(sid, "x"),
        lambda s, sid: s.reopen_session(sid),
        lambda s, sid: s.set_title(sid, "t"),
        lambda s, sid: s.set_flags(sid, pinned=True),
        lambda s, sid: s.update_metadata(sid, {"a": 1}),
        lambda s, sid: s.delete_session(sid),
        lambda s, sid: s.append(sid, user("late")),
        lambda s, sid: s.transcript(sid),
        lambda s, sid: s.record_usage(sid, model="m"),
        lambda s, sid: s.usage(sid),
    ],
)
def test_a_closed_handle_raises_store_closed(open_backend, call):
    store = open_backend()
    sid = store.create_session("cli").id
    store.close()
    with pytest.raises(StoreClosed):
        call(store, sid)
    with open_backend() as check:
        assert check.transcript(sid) == []
        assert ids(check.list_sessions().items) == [sid]


def test_a_context_manager_closes_the_handle(open_backend):
    with open_backend() as store:
        sid = store.create_session("cli").id
    with pytest.raises(StoreClosed):
        store.get_session(sid)


def test_closing_one_of_two_handles_leaves_the_other_working(open_backend):
    """S-10/S-11: a handle closed by one caller never tears down another's."""
    first = open_backend()
    second = open_backend()
    sid = first.create_session("cli").id
    first.append(sid, user("from first"))
    first.close()
    second.append(sid, user("from second"))
    assert [m.content for m in second.transcript(sid)] == ["from first", "from second"]
    assert second.get_session(sid).message_count == 2
    with pytest.raises(StoreClosed):
        first.transcript(sid)
    third = open_backend()
    second.close()
    assert [m.content for m in third.transcript(sid)] == ["from first", "from second"]
    third.append(sid, user("from third"))
    assert third.get_session(sid).message_count == 3


def test_handles_see_each_others_writes_at_once(open_backend):
    a, b = open_backend(), open_backend()
    sid = a.create_session("cli").id
    for i in range(5):
        (a if i % 2 else b).append(sid, user(str(i)))
        assert [m.content for m in a.transcript(sid)] == [str(j) for j in range(i + 1)]
        assert [m.content for m in b.transcript(sid)] == [str(j) for j in range(i + 1)]
