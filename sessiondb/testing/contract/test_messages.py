"""Messages through the public Store contract: appends (idempotent by uid, atomic per batch,
validated before anything is written), transcripts, counters and the activity clock."""

from __future__ import annotations

import re
import time
from datetime import datetime, timezone

import pytest

import sessiondb
from sessiondb import InvalidInput, Message, MessageConflict, NotFound, Role


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def assistant(text, **extra):
    return {"role": "assistant", "content": text, **extra}


def snapshot(store, sid):
    """Everything an append may change, to prove a refused append changed nothing."""
    s = store.get_session(sid)
    rows = store.transcript(sid, include_compacted=True)
    return (
        [(m.id, m.uid, m.role, m.content, m.state) for m in rows],
        s.message_count,
        s.tool_call_count,
        s.last_activity_at,
    )


@pytest.fixture
def sid(store):
    return store.create_session("cli", session_id="sess").id


# --- appending ----------------------------------------------------------------------------


def test_appending_one_message_returns_its_stored_row(store, sid):
    before = time.time()
    [m] = store.append(sid, user("why does it fail?", uid="q1"))
    assert isinstance(m, Message)
    assert (m.session_id, m.uid, m.role, m.content, m.seq, m.state) == (sid, "q1", "user", "why does it fail?", 1, "active")
    assert m.text == "why does it fail?"
    assert before - 1 <= m.timestamp <= time.time() + 1
    assert store.transcript(sid) == [m]


def test_appending_many_stores_them_in_order(store, sid):
    rows = store.append(sid, [user(f"m{i}") for i in range(10)])
    assert [m.content for m in rows] == [f"m{i}" for i in range(10)]
    assert [m.seq for m in rows] == list(range(1, 11))
    assert [m.id for m in rows] == sorted(m.id for m in rows)
    assert len({m.id for m in rows}) == 10
    assert store.transcript(sid) == rows
    assert store.get_session(sid).message_count == 10


def test_seq_continues_across_appends(store, sid):
    store.append(sid, [user("a"), user("b")])
    store.append(sid, user("c"))
    store.append(sid, [assistant("d"), user("e")])
    assert [m.seq for m in store.transcript(sid)] == [1, 2, 3, 4, 5]


def test_a_message_without_a_uid_gets_one_minted(store, sid):
    rows = store.append(sid, [user("a"), user("b"), user("c", uid=None)])
    uids = [m.uid for m in rows]
    assert all(isinstance(u, str) and u for u in uids)
    assert len(set(uids)) == 3
    assert [m.uid for m in store.transcript(sid)] == uids


def test_two_messages_with_the_same_text_and_no_uid_are_two_messages(store, sid):
    store.append(sid, user("again"))
    store.append(sid, user("again"))
    assert [m.content for m in store.transcript(sid)] == ["again", "again"]


def test_message_objects_can_be_appended(store, sid):
    other = store.create_session("cli").id
    loaded = store.append(other, [user("one", uid="u1"), assistant("two", uid="u2")])
    copied = store.append(sid, loaded)
    assert [(m.session_id, m.uid, m.content) for m in copied] == [(sid, "u1", "one"), (sid, "u2", "two")]
    assert {m.id for m in copied}.isdisjoint(m.id for m in loaded)
    assert store.get_session(sid).message_count == 2


def test_a_role_enum_is_accepted_and_stored_as_its_name(store, sid):
    [m] = store.append(sid, {"role": Role.ASSISTANT, "content": "hi"})
    assert m.role == "assistant"
    assert store.transcript(sid)[0].role == "assistant"


def test_every_message_field_round_trips(store, sid):
    stamp = 1_700_000_000.25
    message = {
        "uid": "full",
        "role": "assistant",
        "content": [{"type": "text", "text": "look"}, {"type": "image", "url": "data:..."}],
        "tool_calls": [{"id": "call_1", "function": {"name": "grep", "arguments": "{\"q\": \"x\"}"}}],
        "reasoning": "thinking…",
        "finish_reason": "tool_calls",
        "token_count": 42,
        "timestamp": stamp,
        "display_kind": "normal",
    }
    [m] = store.append(sid, message)
    tool = {"role": "tool", "content": "3 matches", "tool_call_id": "call_1", "tool_name": "grep"}
    [t] = store.append(sid, tool)
    for got in (m, store.transcript(sid)[0]):
        assert got.content == message["content"]
        assert got.tool_calls == message["tool_calls"]
        assert (got.reasoning, got.finish_reason, got.token_count, got.timestamp, got.display_kind) == (
            "thinking…", "tool_calls", 42, stamp, "normal")
    assert (t.tool_call_id, t.tool_name) == ("call_1", "grep")
    assert store.transcript(sid)[1] == t


def test_content_as_a_list_of_parts_round_trips(store, sid, open_backend):
    parts = [
        {"type": "text", "text": "first"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
        "a bare string part",
        {"type": "text", "text": "日本語と emoji 🎉", "cache": {"ttl": 3600, "on": True, "none": None}},
        [1, 2.5, -3],
    ]
    [m] = store.append(sid, user(parts))
    assert m.content == parts
    assert store.transcript(sid)[0].content == parts
    assert m.text == "first\na bare string part\n日本語と emoji 🎉"
    store.close()
    assert open_backend().transcript(sid)[0].content == parts


def test_empty_and_missing_content_are_kept_apart(store, sid):
    rows = store.append(sid, [user(""), user([]), {"role": "assistant", "tool_calls": [{"id": "c"}]}])
    got = [m.content for m in store.transcript(sid)]
    assert got == ["", [], None] == [m.content for m in rows]


def test_timestamps_may_be_aware_datetimes(store, sid):
    when = datetime(2025, 5, 1, 12, 0, tzinfo=timezone.utc)
    [m] = store.append(sid, user("dated", timestamp=when))
    assert m.timestamp == when.timestamp()


# --- identity: idempotent by uid (S-01) ----------------------------------------------------


def test_appending_a_stored_uid_again_returns_the_stored_row_and_stores_nothing(store, sid):
    [first] = store.append(sid, user("hello", uid="h"))
    [again] = store.append(sid, user("hello", uid="h"))
    assert again == first
    assert store.transcript(sid) == [first]
    assert store.get_session(sid).message_count == 1


def test_reappending_a_loaded_transcript_stores_nothing(store, sid):
    """S-01: the field case 998 -> 1,995 -> 3,990 rows must not happen."""
    store.append(sid, [user(f"turn {i}") if i % 2 == 0 else assistant(f"reply {i}") for i in range(998)])
    for flush in range(3):
        loaded = store.transcript(sid)
        assert len(loaded) == 998
        returned = store.append(sid, loaded)
        assert returned == loaded
        assert store.transcript(sid) == loaded
        assert store.get_session(sid).message_count == 998


def test_reflushing_a_loaded_transcript_with_new_turns_stores_only_the_new_turns(store, sid):
    store.append(sid, [user("a"), assistant("b")])
    loaded = store.transcript(sid)
    rows = store.append(sid, [*loaded, user("c", uid="new-c"), assistant("d", uid="new-d")])
    assert rows[:2] == loaded
    assert [m.content for m in store.transcript(sid)] == ["a", "b", "c", "d"]
    assert store.get_session(sid).message_count == 4
    # The same flush a second time (a retry) stores nothing more.
    again = store.append(sid, [*loaded, user("c", uid="new-c"), assistant("d", uid="new-d")])
    assert again == rows
    assert store.get_session(sid).message_count == 4


def test_loaded_messages_reflushed_as_dicts_store_nothing(store, sid):
    store.append(sid, [user([{"type": "text", "text": "x"}]), assistant("y", tool_calls=[{"id": "c1"}])])
    loaded = store.transcript(sid)
    assert store.append(sid, [m.to_dict() for m in loaded]) == loaded
    assert len(store.transcript(sid)) == 2


def test_a_uid_repeated_within_one_batch_is_stored_once(store, sid):
    rows = store.append(sid, [user("same", uid="r"), assistant("other"), user("same", uid="r")])
    assert rows[0] == rows[2]
    assert [m.content for m in store.transcript(sid)] == ["same", "other"]


def test_a_resent_message_with_a_new_timestamp_is_the_same_message(store, sid):
    [first] = store.append(sid, user("said once", uid="t", timestamp=1000.0, token_count=3))
    [again] = store.append(sid, user("said once", uid="t", timestamp=2000.0, token_count=9, finish_reason="stop"))
    assert again == first
    assert store.transcript(sid) == [first]


def test_the_same_uid_in_two_sessions_is_two_messages(store, sid):
    other = store.create_session("cli").id
    [a] = store.append(sid, user("a", uid="shared"))
    [b] = store.append(other, user("b", uid="shared"))
    assert a.id != b.id
    assert [m.content for m in store.transcript(sid)] == ["a"]
    assert [m.content for m in store.transcript(other)] == ["b"]


@pytest.mark.parametrize(
    "changed",
    [
        {"content": "different words"},
        {"role": "assistant"},
        {"content": [{"type": "text", "text": "original"}]},
        {"content": None},
        {"tool_calls": [{"id": "c9"}]},
        {"reasoning": "new thoughts"},
        {"tool_call_id": "other-call"},
        {"tool_name": "other-tool"},
    ],
)
def test_the_same_uid_with_different_content_raises_message_conflict(store, sid, changed):
    original = {"uid": "x", "role": "user", "content": "original"}
    store.append(sid, original)
    before = snapshot(store, sid)
    with pytest.raises(MessageConflict):
        store.append(sid, {**original, **changed})
    assert snapshot(store, sid) == before


def test_message_conflict_is_a_conflict_and_names_the_uid(store, sid):
    store.append(sid, user("one", uid="named-uid"))
    with pytest.raises(sessiondb.Conflict, match="named-uid"):
        store.append(sid, user("two", uid="named-uid"))


def test_a_conflict_in_the_middle_of_a_batch_writes_nothing_of_the_batch(store, sid):
    store.append(sid, [user("kept", uid="k1"), assistant("kept too", uid="k2")])
    before = snapshot(store, sid)
    batch = [
        user("fresh 1", uid="f1"),
        assistant("fresh 2", uid="f2", tool_calls=[{"id": "t"}]),
        user("changed!", uid="k1"),  # conflicts with the stored k1
        user("fresh 3", uid="f3"),
    ]
    with pytest.raises(MessageConflict):
        store.append(sid, batch)
    assert snapshot(store, sid) == before
    uids = {m.uid for m in store.transcript(sid, include_compacted=True)}
    assert uids == {"k1", "k2"}
    # The fresh uids were never stored: appending them now creates them.
    rows = store.append(sid, [user("fresh 1", uid="f1"), user("fresh 3", uid="f3")])
    assert [m.seq for m in rows] == [3, 4]


def test_a_uid_conflicting_within_one_batch_writes_nothing(store, sid):
    before = snapshot(store, sid)
    with pytest.raises(MessageConflict):
        store.append(sid, [user("a", uid="dup"), user("fresh", uid="f"), user("b", uid="dup")])
    assert snapshot(store, sid) == before


# --- bad input: a typed error, and nothing written -----------------------------------------


BAD_MESSAGES = {
    "unknown role": {"role": "robot", "content": "x"},
    "missing role": {"content": "x"},
    "role as number": {"role": 1, "content": "x"},
    "content set": {"role": "user", "content": {"a", "b"}},
    "content object": {"role": "user", "content": object()},
    "content number": {"role": "user", "content": 12},
    "content dict": {"role": "user", "content": {"text": "x"}},
    "part set": {"role": "user", "content": [{"a", "b"}]},
    "part object": {"role": "user", "content": [{"type": "text", "x": object()}]},
    "part NaN": {"role": "user", "content": [{"type": "num", "v": float("nan")}]},
    "tool_calls NaN": {"role": "assistant", "content": "x", "tool_calls": [{"score": float("nan")}]},
    "tool_calls infinity": {"role": "assistant", "content": "x", "tool_calls": [{"score": float("inf")}]},
    "tool_calls dict": {"role": "assistant", "content": "x", "tool_calls": {"id": "c"}},
    "token NaN": {"role": "user", "content": "x", "token_count": float("nan")},
    "token negative": {"role": "user", "content": "x", "token_count": -1},
    "token text": {"role": "user", "content": "x", "token_count": "12"},
    "token bool": {"role": "user", "content": "x", "token_count": True},
    "token float": {"role": "user", "content": "x", "token_count": 1.5},
    "uid empty": {"role": "user", "content": "x", "uid": ""},
    "uid number": {"role": "user", "content": "x", "uid": 7},
    "uid too long": {"role": "user", "content": "x", "uid": "u" * 201},
    "uid NUL": {"role": "user", "content": "x", "uid": "a\x00b"},
    "timestamp NaN": {"role": "user", "content": "x", "timestamp": float("nan")},
    "timestamp text": {"role": "user", "content": "x", "timestamp": "now"},
    "timestamp naive": {"role": "user", "content": "x", "timestamp": datetime(2025, 1, 1)},
    "reasoning number": {"role": "assistant", "content": "x", "reasoning": 5},
    "tool_name number": {"role": "tool", "content": "x", "tool_name": 5},
    "tool_call_id too long": {"role": "tool", "content": "x", "tool_call_id": "c" * 201},
    "display_kind list": {"role": "user", "content": "x", "display_kind": ["a"]},
    "state unknown": {"role": "user", "content": "x", "state": "deleted"},
    "unknown field": {"role": "user", "content": "x", "colour": "red"},
}


@pytest.mark.parametrize("bad", BAD_MESSAGES.values(), ids=BAD_MESSAGES.keys())
def test_a_bad_message_raises_invalid_input_and_nothing_is_written(store, sid, bad):
    store.append(sid, user("existing", uid="e"))
    before = snapshot(store, sid)
    with pytest.raises(InvalidInput):
        store.append(sid, bad)
    # ...also when the bad message is in the middle of an otherwise good batch.
    with pytest.raises(InvalidInput):
        store.append(sid, [user("good 1", uid="g1"), bad, user("good 2", uid="g2")])
    assert snapshot(store, sid) == before


@pytest.mark.parametrize("messages", ["just text", b"bytes", 42, None, [], [None], ["text"], [42]],
                         ids=["str", "bytes", "int", "None", "empty", "[None]", "[str]", "[int]"])
def test_an_append_that_is_not_messages_raises_invalid_input(store, sid, messages):
    before = snapshot(store, sid)
    with pytest.raises(InvalidInput):
        store.append(sid, messages)
    assert snapshot(store, sid) == before


def test_appending_to_an_unknown_session_raises_not_found_and_creates_nothing(store, sid):
    with pytest.raises(NotFound):
        store.append("no-such-session", [user("lost", uid="l1")])
    with pytest.raises(NotFound):
        store.get_session("no-such-session")
    assert [s.id for s in store.list_sessions(include_archived=True, include_hidden=True).items] == [sid]


@pytest.mark.parametrize("bad_sid", [None, "", 5, "x" * 201])
def test_a_bad_session_id_raises_invalid_input(store, bad_sid):
    with pytest.raises(InvalidInput):
        store.append(bad_sid, user("x"))
    with pytest.raises(InvalidInput):
        store.transcript(bad_sid)


def test_validation_errors_are_value_errors_and_not_found_is_a_lookup_error(store, sid):
    with pytest.raises(ValueError):
        store.append(sid, {"role": "robot"})
    with pytest.raises(LookupError):
        store.append("ghost", user("x"))


# --- transcripts --------------------------------------------------------------------------


@pytest.fixture
def ten(store, sid):
    return store.append(sid, [user(f"m{i}", uid=f"u{i}") for i in range(10)])


def contents(rows):
    return [m.content for m in rows]


def test_a_transcript_is_in_commit_order(store, sid):
    other = store.create_session("cli").id
    for i in range(6):
        store.append(sid if i % 2 == 0 else other, user(f"m{i}", timestamp=1000.0 - i))
    assert contents(store.transcript(sid)) == ["m0", "m2", "m4"]
    assert contents(store.transcript(other)) == ["m1", "m3", "m5"]


def test_a_transcript_limit_takes_the_first_messages(store, sid, ten):
    assert store.transcript(sid, limit=3) == ten[:3]
    assert store.transcript(sid, limit=100) == ten
    assert store.transcript(sid, limit=0) == []


def test_desc_order_gives_the_newest_first(store, sid, ten):
    assert store.transcript(sid, order="desc") == ten[::-1]
    assert store.transcript(sid, order="desc", limit=3) == ten[::-1][:3]


def test_before_and_after_are_exclusive_message_id_bounds(store, sid, ten):
    assert store.transcript(sid, after=ten[3].id) == ten[4:]
    assert store.transcript(sid, before=ten[3].id) == ten[:3]
    assert store.transcript(sid, after=ten[2].id, before=ten[6].id) == ten[3:6]
    assert store.transcript(sid, after=ten[-1].id) == []
    assert store.transcript(sid, before=ten[0].id) == []


def test_paging_forward_and_backward_visits_every_message_once(store, sid, ten):
    forward, after = [], None
    while True:
        page = store.transcript(sid, limit=3, after=after)
        if not page:
            break
        forward += page
        after = page[-1].id
    assert forward == ten
    backward, before = [], None
    while True:
        page = store.transcript(sid, limit=4, before=before, order="desc")
        if not page:
            break
        backward += page
        before = page[-1].id
    assert backward == ten[::-1]


@pytest.mark.parametrize("kwargs", [{"order": "up"}, {"order": "DESC "}, {"limit": -1}, {"limit": "3"},
                                    {"before": -5}, {"after": 1.5}, {"include_compacted": "yes"}])
def test_bad_transcript_arguments_raise_invalid_input(store, sid, ten, kwargs):
    with pytest.raises(InvalidInput):
        store.transcript(sid, **kwargs)


def test_the_transcript_of_an_unknown_session_raises_not_found(store):
    with pytest.raises(NotFound):
        store.transcript("ghost")


def test_compacted_messages_are_read_only_when_asked_for_and_rewound_never(store, sid):
    rows = store.append(sid, [
        user("live 1"),
        user("archived", state="compacted"),
        user("undone", state="rewound"),
        assistant("live 2"),
    ])
    assert [m.state for m in rows] == ["active", "compacted", "rewound", "active"]
    assert contents(store.transcript(sid)) == ["live 1", "live 2"]
    assert contents(store.transcript(sid, include_compacted=True)) == ["live 1", "archived", "live 2"]
    assert store.get_session(sid).message_count == 2


# --- counters and the activity clock -------------------------------------------------------


def test_message_and_tool_call_counts_follow_what_is_stored(store, sid):
    store.append(sid, [
        user("go"),
        assistant(None, tool_calls=[{"id": "a"}, {"id": "b"}]),
        {"role": "tool", "content": "r1", "tool_call_id": "a"},
        {"role": "tool", "content": "r2", "tool_call_id": "b"},
        assistant("done", tool_calls=[{"id": "c"}], uid="last"),
    ])
    s = store.get_session(sid)
    assert (s.message_count, s.tool_call_count) == (5, 3)
    # Re-appending a stored message counts nothing twice.
    store.append(sid, assistant("done", tool_calls=[{"id": "c"}], uid="last"))
    s = store.get_session(sid)
    assert (s.message_count, s.tool_call_count) == (5, 3)
    # A refused batch counts nothing.
    with pytest.raises(MessageConflict):
        store.append(sid, [assistant("x", tool_calls=[{"id": "d"}]), user("clash", uid="last")])
    s = store.get_session(sid)
    assert (s.message_count, s.tool_call_count) == (5, 3)


def test_user_and_assistant_messages_move_last_activity(store, sid):
    base = time.time() + 100
    store.append(sid, user("u", timestamp=base + 1))
    assert store.get_session(sid).last_activity_at == base + 1
    store.append(sid, assistant("a", timestamp=base + 2))
    assert store.get_session(sid).last_activity_at == base + 2


def test_an_append_without_timestamps_stamps_activity_now(store, sid):
    before = time.time()
    store.append(sid, user("now"))
    activity = store.get_session(sid).last_activity_at
    assert before - 1 <= activity <= time.time() + 1
    assert activity == store.transcript(sid)[0].timestamp


@pytest.mark.parametrize("message", [
    {"role": "tool", "content": "tool output", "tool_call_id": "c"},
    {"role": "system", "content": "you are helpful"},
    {"role": "user", "content": "[cron] reminder fired", "display_kind": "internal_notification"},
    {"role": "assistant", "content": "noted", "display_kind": "internal_notification"},
], ids=["tool", "system", "user notification", "assistant notification"])
def test_messages_that_are_not_user_activity_leave_last_activity_alone(store, sid, message):
    """S-09: an internal notification stored as a user turn is not user activity."""
    base = time.time() + 100
    store.append(sid, user("real", timestamp=base))
    store.append(sid, {**message, "timestamp": base + 50})
    s = store.get_session(sid)
    assert s.last_activity_at == base
    assert s.message_count == 2
    assert store.transcript(sid)[-1].display_kind == message.get("display_kind")


def test_a_session_with_only_internal_turns_has_no_activity(store, sid):
    store.append(sid, [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "n", "display_kind": "internal_notification"},
    ])
    assert store.get_session(sid).last_activity_at is None


def test_last_activity_never_moves_backwards(store, sid):
    base = time.time() + 100
    store.append(sid, assistant("late", timestamp=base + 10))
    store.append(sid, user("backfilled", timestamp=base))
    assert store.get_session(sid).last_activity_at == base + 10


def test_a_reappended_message_does_not_move_last_activity(store, sid):
    base = time.time() + 100
    store.append(sid, user("hi", uid="h", timestamp=base))
    store.append(sid, user("hi", uid="h", timestamp=base + 500))
    assert store.get_session(sid).last_activity_at == base


# --- persistence --------------------------------------------------------------------------


def test_reopening_the_store_keeps_every_message(store, sid, open_backend):
    rows = store.append(sid, [user(f"m{i}", uid=f"u{i}") for i in range(50)])
    session = store.get_session(sid)
    store.close()
    again = open_backend()
    assert again.transcript(sid) == rows
    assert again.get_session(sid) == session
    # Identity survives the reopen: the same uids store nothing.
    assert again.append(sid, rows) == rows
    assert again.get_session(sid).message_count == 50
    # And new appends continue the sequence.
    [new] = again.append(sid, user("after reopen"))
    assert new.seq == 51 and new.id > rows[-1].id


def test_minted_uids_look_like_identities(store, sid):
    [m] = store.append(sid, user("x"))
    assert re.fullmatch(r"[0-9a-zA-Z_:-]{8,200}", m.uid)
