"""Identity survives every read (S-01, S-44): what transcript, resume, export and
export_session return can be handed back to append or flush without storing anything twice,
and an agent that resumes, adds and flushes its whole list ends with exactly the distinct
messages, across compactions and rotations."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from sessiondb import InvalidInput


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def assistant(text, **extra):
    return {"role": "assistant", "content": text, **extra}


def turn(sid):
    """A user and an assistant message with text no other turn has."""
    return [user(f"question {sid}"), assistant(f"answer {sid}")]


def conversation_rows(store, sid):
    """Every stored message of the conversation `sid` belongs to (all sessions, every state)."""
    return [m for s in store.lineage(sid) for m in store.transcript(s.id, include_compacted=True)]


def payloads(rows):
    return [(m.role, json.dumps(m.content, sort_keys=True), m.tool_call_id, m.tool_name) for m in rows]


@pytest.fixture
def sid(store):
    s = store.create_session("cli", session_id="agent")
    store.append(s.id, [
        {"role": "system", "content": "be brief"},
        user("list the files", display_kind="internal_notification"),
        assistant("", tool_calls=[{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]),
        {"role": "tool", "content": [{"type": "text", "text": "a.py b.py"}], "tool_call_id": "c1",
         "tool_name": "ls"},
        assistant("two files", reasoning="counted them"),
    ])
    return s.id


def compact(store, sid, mode, text):
    lease = store.begin_compaction(sid)
    return store.commit_compaction(lease, [{"role": "system", "content": text}], mode=mode).id


# --- the field case ------------------------------------------------------------------------


@pytest.mark.parametrize("flush", ["flush", "append"])
def test_resume_add_flush_three_times_across_compactions_stores_each_message_once(store, sid, flush):
    """The cold-resume field case: resume, add one turn, hand the whole list back, three times,
    with an in-place compaction and a rotation in between."""
    write = getattr(store, flush)
    distinct = len(conversation_rows(store, sid))
    for round_, between in enumerate([None, "in_place", "rotate"]):
        if between:
            compact(store, sid, between, f"summary {round_}")
            distinct += 1
        conversation = store.resume(sid)
        conversation.extend(turn(round_))
        write(sid, conversation)
        distinct += 2
        rows = conversation_rows(store, sid)
        assert len(rows) == distinct, f"round {round_}: {len(rows)} rows, {distinct} distinct messages"
        assert len({(m.session_id, m.uid) for m in rows}) == len(rows)
    assert len(store.lineage(sid)) == 2
    tip = store.tip(sid).id
    assert [m["content"] for m in store.resume(sid)][-2:] == ["question 2", "answer 2"]
    assert store.get_session(tip).message_count == len(store.resume(sid))


def test_flushing_a_resumed_list_that_lost_its_identity_stores_only_the_new(store, sid):
    """A conversation sent through JSON keeps no attribute: flush matches it by what each
    message says and where it stands."""
    compact(store, sid, "in_place", "summary")
    for round_ in range(3):
        conversation = json.loads(json.dumps(store.resume(sid)))
        conversation.extend(turn(round_))
        before = len(conversation_rows(store, sid))
        stored = store.flush(sid, conversation)
        assert len(conversation_rows(store, sid)) == before + 2
        assert [m.content for m in stored[-2:]] == [f"question {round_}", f"answer {round_}"]
    compact(store, sid, "rotate", "summary 2")
    conversation = [dict(m) for m in store.resume(sid)] + turn("after rotation")
    before = len(conversation_rows(store, sid))
    store.flush(sid, conversation)
    assert len(conversation_rows(store, sid)) == before + 2


# --- identity lost on the way, across every compaction of the lineage (S-47) -----------------


COPIES = {
    "json": lambda ms: json.loads(json.dumps(ms)),
    "dict": lambda ms: [dict(m) for m in ms],
    "unpacked": lambda ms: [{**m} for m in ms],
    "copy": lambda ms: [m.copy() for m in ms],
}


def long_conversation(store, size):
    """A session of `size` messages in which the same short words come back again and again."""
    s = store.create_session("cli")
    said = [{"role": "system", "content": "be brief"}]
    for i in range(1, size):
        said.append(user("ok") if i % 4 == 1 else assistant(f"step {i}") if i % 2 else assistant("noted"))
    store.append(s.id, said)
    return s.id


def live_contents(store, sid):
    return [m["content"] for m in store.resume(sid)]


@pytest.mark.parametrize(("copy_with", "size"), [
    *((name, 60) for name in sorted(COPIES)), pytest.param("json", 998, marks=pytest.mark.long)])
@pytest.mark.parametrize("mode", ["in_place", "rotate"])
@pytest.mark.parametrize("outcome", ["aborted", "committed"])
def test_the_whole_list_as_json_after_each_of_three_compactions_stores_only_the_new(store, mode, outcome, copy_with,
                                                                                     size):
    """The field case (S-47): an agent keeps the list it resumed before any compaction (copied
    into plain dicts), adds a message, and flushes all of it as plain JSON after each
    compaction, three times. Each new message says what an earlier one did ("ok"): after the
    stored prefix it is new."""
    sid = long_conversation(store, size)
    conversation = COPIES[copy_with](store.resume(sid))
    for round_ in range(3):
        lease = store.begin_compaction(sid)
        if outcome == "aborted":
            store.abort_compaction(lease)
        else:
            store.commit_compaction(lease, [{"role": "system", "content": f"summary {round_}"}], mode=mode)
        before = len(conversation_rows(store, sid))
        conversation = COPIES["json"](conversation) + [user("ok")]
        stored = store.flush(sid, conversation)
        assert len(conversation_rows(store, sid)) == before + 1, f"round {round_}"
        assert len(stored) == len(conversation) and stored[-1].content == "ok"
        if outcome == "committed":
            assert live_contents(store, sid) == [f"summary {round_}", "ok"], f"round {round_}"
    if outcome == "aborted":
        assert live_contents(store, sid) == [m["content"] for m in conversation]
    assert store.verify().ok


@pytest.mark.parametrize("copy_with", sorted(COPIES))
@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_resumed_list_copied_into_plain_dicts_after_each_compaction_stores_only_the_new(store, mode, copy_with):
    """The list an agent resumes after a compaction holds the summary: copied any way that
    drops the uid and flushed with one new message, three times, only the new is stored."""
    sid = long_conversation(store, 40)
    for round_ in range(3):
        compact(store, sid, mode, f"summary {round_}")
        for new in (user("ok"), assistant(f"reply {round_}"), user("ok")):
            resumed = live_contents(store, sid)
            before = len(conversation_rows(store, sid))
            store.flush(sid, COPIES[copy_with](store.resume(sid)) + [new])
            assert len(conversation_rows(store, sid)) == before + 1, f"round {round_}"
            assert live_contents(store, sid) == resumed + [new["content"]]
    assert live_contents(store, sid) == ["summary 2", "ok", "reply 2", "ok"]


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_list_resumed_between_compactions_and_flushed_after_later_ones_stores_only_the_new(store, mode):
    """A list that holds the first summary and predates the next compactions."""
    sid = long_conversation(store, 40)
    compact(store, sid, mode, "summary 0")
    conversation = COPIES["json"](store.resume(sid))
    for round_ in range(1, 4):
        compact(store, sid, mode, f"summary {round_}")
        before = len(conversation_rows(store, sid))
        conversation = COPIES["json"](conversation) + [assistant(f"reply {round_}")]
        store.flush(sid, conversation)
        assert len(conversation_rows(store, sid)) == before + 1, f"round {round_}"
        assert live_contents(store, sid) == [f"summary {round_}", f"reply {round_}"]


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_list_from_before_a_compaction_that_messages_joined_while_it_ran_stores_only_the_new(store, mode):
    """Messages flushed while the summary was being written follow it; the agent's list has
    them right after the messages the summary replaced."""
    sid = long_conversation(store, 30)
    conversation = COPIES["json"](store.resume(sid))
    lease = store.begin_compaction(sid)
    conversation += [user("ok"), assistant("noted")]
    store.flush(sid, COPIES["json"](conversation))
    store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode=mode)
    before = len(conversation_rows(store, sid))
    store.flush(sid, COPIES["json"](conversation) + [user("ok")])
    assert len(conversation_rows(store, sid)) == before + 1
    assert live_contents(store, sid) == ["summary", "ok", "noted", "ok"]


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_message_a_compaction_kept_is_matched_where_the_old_list_still_has_it(store, sid, mode):
    """A summary that keeps the system prompt moves it after the archived messages; a list
    from before the compaction still has it first."""
    conversation = COPIES["json"](store.resume(sid))
    system = store.transcript(sid)[0]
    lease = store.begin_compaction(sid)
    store.commit_compaction(lease, [system, {"role": "system", "content": "summary"}], mode=mode)
    before = len(conversation_rows(store, sid))
    store.flush(sid, conversation + [user("ok")])
    assert len(conversation_rows(store, sid)) == before + 1
    assert live_contents(store, sid) == ["be brief", "summary", "ok"]


def test_a_message_said_again_after_a_rewind_is_stored(store, sid):
    """A rewound message is no longer said: the same words said again are a new message of
    the live conversation, not the undone row."""
    rows = store.transcript(sid)
    store.rewind(sid, rows[-2].id)
    conversation = COPIES["json"](store.resume(sid)) + [assistant("two files", reasoning="counted them")]
    store.flush(sid, conversation)
    assert live_contents(store, sid)[-1] == "two files"
    assert len(store.transcript(sid)) == len(rows)


def test_flushing_what_is_already_stored_writes_nothing(store, sid):
    before = store.get_session(sid)
    rows = store.flush(sid, json.loads(json.dumps(store.resume(sid))))
    assert [m.uid for m in rows] == [m.uid for m in store.transcript(sid)]
    assert store.get_session(sid) == before


def test_flush_keeps_a_repeated_message_that_is_new(store, sid):
    """Matching is by position: the same words said again later are a new message."""
    conversation = json.loads(json.dumps(store.resume(sid)))
    conversation.append(dict(conversation[-1]))
    store.flush(sid, conversation)
    assert [m.content for m in store.transcript(sid)][-2:] == ["two files", "two files"]


def test_flush_stores_a_plain_message_whose_place_another_claims_by_uid(store, sid):
    """A message without identity matches a stored row only if no message of the list holds
    that row by uid: here the plain one is a new message said before the resumed one."""
    resumed = store.resume(sid)
    store.flush(sid, [dict(resumed[0]), *resumed])
    assert [m["content"] for m in store.resume(sid)][:2] == ["be brief", "list the files"]
    assert [m.content for m in store.transcript(sid)][-1] == "be brief"
    assert len(store.transcript(sid)) == len(resumed) + 1


def test_flush_refuses_bad_input_and_writes_nothing(store, sid):
    before = conversation_rows(store, sid)
    with pytest.raises(InvalidInput):
        store.flush(sid, [*store.resume(sid), user("fine"), {"role": "robot", "content": "no"}])
    with pytest.raises(InvalidInput):
        store.flush(sid, "not a list")
    assert conversation_rows(store, sid) == before


# --- each read, handed back ----------------------------------------------------------------


def test_resumed_messages_show_a_provider_only_the_standard_keys(store, sid):
    conversation = store.resume(sid)
    assert json.loads(json.dumps(conversation)) == conversation
    assert {k for m in conversation for k in m} <= {"role", "content", "tool_calls", "tool_call_id", "name",
                                                    "reasoning"}
    uids = [m.uid for m in store.transcript(sid)]
    assert [m.uid for m in conversation] == uids
    assert [m.uid for m in copy.deepcopy(conversation)] == uids
    assert [m.uid for m in pickle.loads(pickle.dumps(conversation))] == uids


def test_appending_a_resumed_conversation_stores_nothing(store, sid):
    before = conversation_rows(store, sid)
    rows = store.append(sid, store.resume(sid))
    assert rows == store.transcript(sid)
    assert conversation_rows(store, sid) == before


def test_appending_export_records_stores_nothing(store, sid):
    compact(store, sid, "in_place", "summary")
    before = conversation_rows(store, sid)
    records = [r["message"] for r in store.export([sid]) if r["type"] == "message"]
    assert any(r["parts"] is not None for r in records)
    store.append(sid, records)
    assert conversation_rows(store, sid) == before


def test_appending_export_session_messages_stores_nothing(store, sid):
    before = conversation_rows(store, sid)
    store.append(sid, store.export_session(sid)["messages"])
    assert conversation_rows(store, sid) == before


def test_read_back_messages_carry_their_payload_into_a_new_session(store, sid):
    """What a read returns is a whole message: written to another session it says the same."""
    for source in (store.resume(sid), store.export_session(sid)["messages"]):
        copy_id = store.create_session("cli").id
        store.append(copy_id, source)
        assert payloads(store.transcript(copy_id)) == payloads(store.transcript(sid))


def test_a_tool_message_name_is_its_tool_name(store, sid):
    [m] = store.append(sid, {"role": "tool", "content": "ok", "tool_call_id": "c2", "name": "grep"})
    assert m.tool_name == "grep"
    with pytest.raises(InvalidInput, match="only on a tool message"):
        store.append(sid, user("hi", name="alice"))
    with pytest.raises(InvalidInput, match="disagree"):
        store.append(sid, {"role": "tool", "content": "x", "name": "grep", "tool_name": "ls"})
    with pytest.raises(InvalidInput, match="content and parts disagree"):
        store.append(sid, {"role": "user", "content": "x", "parts": [{"type": "text", "text": "y"}]})
