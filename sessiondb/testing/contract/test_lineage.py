"""Lineage, tips, branches, rewinds and the lease API, through the public store."""

from __future__ import annotations

import asyncio

import pytest

import sessiondb
from sessiondb import CompactionBusy, InvalidInput, LeaseLost, MessageConflict, NotFound


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def summary(text="the gist", **extra):
    return {"role": "system", "content": text, **extra}


@pytest.fixture
def sid(store):
    s = store.create_session("cli", title="Plan")
    store.append(s.id, [user(f"m{i}", uid=f"m{i}") for i in range(4)])
    return s.id


def rotate(store, session_id, text="the gist", **extra):
    lease = store.begin_compaction(session_id)
    return store.commit_compaction(lease, summary(text, **extra), mode="rotate")


def test_a_session_without_continuations_is_its_own_tip_and_lineage(store, sid):
    assert store.tip(sid).id == sid
    assert [s.id for s in store.lineage(sid)] == [sid]


def test_a_rotated_child_is_the_same_conversation_under_the_same_key(store):
    parent = store.create_session("gateway", title="Chat", session_key="agent:main:telegram:dm:1",
                                  user_id="u", chat_id="1", chat_type="dm", thread_id="t", model="m",
                                  metadata={"cwd": "/x"})
    store.set_flags(parent.id, pinned=True, hidden=True)
    child = rotate(store, parent.id)
    assert (child.source, child.session_key, child.user_id, child.chat_id, child.chat_type, child.thread_id,
            child.model, child.metadata, child.pinned, child.hidden) == (
        "gateway", "agent:main:telegram:dm:1", "u", "1", "dm", "t", "m", {"cwd": "/x"}, True, True)
    assert (child.parent_session_id, child.parent_relation, child.ended_at) == (parent.id, "compression", None)
    assert child.title == "Chat #2"
    assert rotate(store, child.id).title == "Chat #3"
    closed = store.get_session(parent.id)
    assert closed.end_reason == "compression" and closed.ended_at is not None and closed.title == "Chat"


def test_tip_follows_only_compression_children(store, sid):
    tail = store.transcript(sid)[-1]
    store.branch(sid, tail.id)
    store.create_session("cli", parent_session_id=sid, parent_relation="reset")
    store.create_session("cli", parent_session_id=sid)  # a delegation, say
    assert store.tip(sid).id == sid
    child = rotate(store, sid)
    assert store.tip(sid).id == child.id
    assert [s.id for s in store.lineage(child.id)] == [sid, child.id]


def test_tip_prefers_the_live_continuation(store, sid):
    live = rotate(store, sid)
    store.reopen_session(sid)  # someone reopened the parent and rotated it again...
    ended = rotate(store, sid)
    store.end_session(ended.id, "user_exit")  # ...and that continuation was ended
    assert store.tip(sid).id == live.id
    store.end_session(live.id, "user_exit")
    assert store.tip(sid).id in {live.id, ended.id}


def test_a_transcript_at_the_tip_reads_the_session_that_continues_it(store, sid):
    assert store.transcript(sid, tip=True) == store.transcript(sid)  # its own tip
    child = rotate(store, sid, uid="gist")
    store.append(sid, user("after", uid="after"))  # lands at the tip
    assert [m.uid for m in store.transcript(sid, tip=True)] == ["gist", "after"]
    assert [m.uid for m in store.transcript(sid, tip=True, limit=1, order="desc")] == ["after"]
    assert {m.session_id for m in store.transcript(sid, tip=True)} == {child.id}
    assert [m.uid for m in store.transcript(sid, include_compacted=True)] == [f"m{i}" for i in range(4)]
    with pytest.raises(NotFound):
        store.transcript("missing", tip=True)
    with pytest.raises(InvalidInput):
        store.transcript(sid, tip="yes")


def test_begin_compaction_on_a_rotated_session_leases_its_live_tip(store, sid):
    child = rotate(store, sid)
    lease = store.begin_compaction(sid)
    assert lease.session_id == child.id
    with pytest.raises(CompactionBusy):
        store.begin_compaction(child.id)


def test_a_lease_survives_reopening_the_store(open_backend, sid, store):
    lease = store.begin_compaction(sid, holder="h")
    store.close()
    with open_backend() as again:
        assert again.compaction_lease(sid) == lease
        with pytest.raises(CompactionBusy):
            again.begin_compaction(sid)
        again.commit_compaction(lease, summary())
        assert again.compaction_lease(sid) is None


def test_fencing_tokens_only_grow(store, sid):
    tokens = []
    for _ in range(3):
        lease = store.begin_compaction(sid)
        tokens.append(lease.token)
        store.abort_compaction(lease)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3


def test_an_aborted_lease_cannot_commit(store, sid):
    lease = store.begin_compaction(sid)
    store.abort_compaction(lease)
    store.abort_compaction(lease)  # idempotent
    with pytest.raises(LeaseLost):
        store.commit_compaction(lease, summary())


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "60", True])
def test_a_lease_ttl_must_be_a_positive_bounded_number(store, sid, bad):
    with pytest.raises(InvalidInput):
        store.begin_compaction(sid, ttl=bad)


def test_commit_refuses_bad_summaries_and_writes_nothing(store, sid):
    lease = store.begin_compaction(sid)
    before = store.transcript(sid, include_compacted=True)
    with pytest.raises(InvalidInput):
        store.commit_compaction(lease, summary(), mode="sideways")
    with pytest.raises(InvalidInput):
        store.commit_compaction(lease, [])
    with pytest.raises(InvalidInput):
        store.commit_compaction(lease, [summary(uid="x"), summary(uid="x")])
    with pytest.raises(MessageConflict):
        store.commit_compaction(lease, [summary(uid="m1")])  # a stored uid with other content
    with pytest.raises(InvalidInput):
        store.commit_compaction("not a lease", summary())
    assert store.transcript(sid, include_compacted=True) == before
    store.commit_compaction(lease, summary())  # the lease is still good


def test_a_summary_cannot_resurrect_a_message_archived_in_an_earlier_session(store, sid):
    child = rotate(store, sid, uid="s1")
    lease = store.begin_compaction(child.id)
    with pytest.raises(MessageConflict, match="earlier session"):
        store.commit_compaction(lease, [summary(uid="s2"), user("m0", uid="m0")])


def test_an_identity_stored_earlier_in_the_lineage_with_other_content_is_a_conflict(store, sid):
    child = rotate(store, sid)
    with pytest.raises(MessageConflict):
        store.append(child.id, user("something else", uid="m0"))


def test_in_place_compaction_keeps_numbering_after_the_last_archived_message(store, sid):
    lease = store.begin_compaction(sid)
    store.append(sid, user("tail", uid="t"))
    store.commit_compaction(lease, summary(uid="s"))
    [after] = store.append(sid, user("next", uid="n"))
    seqs = {m.uid: m.seq for m in store.transcript(sid)}
    assert seqs == {"s": 4, "t": 5, "n": 6}
    assert after.seq == 6


def test_branch_copies_the_active_messages_up_to_a_point_and_records_its_origin(store, sid, stored_rows):
    rows = store.transcript(sid)
    store.rewind(sid, rows[3].id)  # nothing after m3: no-op
    b = store.branch(sid, rows[1].id, title="What if")
    assert (b.parent_session_id, b.parent_relation, b.title, b.message_count) == (sid, "branch", "What if", 2)
    copies = store.transcript(b.id)
    assert [(m.uid, m.seq, m.content, m.timestamp) for m in copies] == [
        (m.uid, m.seq, m.content, m.timestamp) for m in rows[:2]]
    assert all(c.id > rows[-1].id for c in copies)
    assert b.last_activity_at == rows[1].timestamp
    assert store.append(b.id, [m.to_dict() for m in copies]) == copies  # a re-flush stores nothing
    assert len(stored_rows(store, sid)) == 4  # the original is untouched
    assert [s.id for s in store.lineage(b.id)] == [b.id]


def test_branch_and_rewind_need_a_message_of_that_session(store, sid):
    other = store.create_session("cli")
    [foreign] = store.append(other.id, user("elsewhere"))
    with pytest.raises(NotFound):
        store.branch(sid, foreign.id)
    with pytest.raises(NotFound):
        store.rewind(sid, foreign.id)
    with pytest.raises(InvalidInput):
        store.rewind(sid, -1)


def test_a_rewind_up_to_a_message_leaves_the_messages_after_it(store, sid):
    rows = store.transcript(sid)
    assert store.rewind(sid, rows[0].id, through_message_id=rows[2].id) == 2
    assert [m.id for m in store.transcript(sid)] == [rows[0].id, rows[3].id]
    assert store.get_session(sid).message_count == 2
    assert store.rewind(sid, rows[0].id, through_message_id=rows[2].id) == 0  # done already: nothing more
    assert store.rewind(sid, 0, through_message_id=rows[0].id) == 1
    assert [m.id for m in store.transcript(sid)] == [rows[3].id]
    with pytest.raises(InvalidInput):
        store.rewind(sid, rows[3].id, through_message_id=rows[3].id)  # an empty range is a mistake
    with pytest.raises(NotFound):
        store.rewind(sid, 0, through_message_id=store.append(store.create_session("cli").id, user("x"))[0].id)
    assert store.restore_rewound(sid) == 3


def test_rewinding_drops_tool_calls_from_the_counters_and_restoring_brings_them_back(store, sid):
    calls = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}] * 2
    store.append(sid, {"role": "assistant", "content": None, "tool_calls": calls, "uid": "a"})
    assert store.get_session(sid).tool_call_count == 2
    store.rewind(sid, store.transcript(sid)[0].id)
    assert (store.get_session(sid).message_count, store.get_session(sid).tool_call_count) == (1, 0)
    store.restore_rewound(sid)
    assert (store.get_session(sid).message_count, store.get_session(sid).tool_call_count) == (5, 2)


def test_parent_relation_needs_a_parent(store):
    with pytest.raises(InvalidInput):
        store.create_session("cli", parent_relation="compression")


def test_the_async_store_offers_the_lineage_calls(open_backend, sid, store):
    async def scenario():
        async with sessiondb.AsyncStore(open_backend()) as astore:
            lease = await astore.begin_compaction(sid)
            child = await astore.commit_compaction(lease, summary(uid="g"), mode="rotate")
            assert (await astore.tip(sid)).id == child.id
            assert [s.id for s in await astore.lineage(sid)] == [sid, child.id]
            return await astore.resume(sid)

    assert asyncio.run(scenario()) == [{"role": "system", "content": "the gist"}]
