"""The field scenarios of compaction and lineage (S-02..S-06, S-08, S-09, S-42), each
recreated on a real store through public calls. S-07 (holders that died) needs the host's
process table and real holder processes: sessiondb/testing/contract/test_lease_holders.py."""

from __future__ import annotations

import json
import threading
import time

import pytest

from sessiondb import (
    Cause, CompactionBusy, CompressionClosed, InvalidInput, LeaseLost, MessageConflict, SessionTooLarge,
)

MODES = ["in_place", "rotate"]


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def assistant(text, **extra):
    return {"role": "assistant", "content": text, **extra}


def summary(text="summary of the conversation so far", **extra):
    return {"role": "system", "content": text, **extra}


def every_column(rows):
    """Every column but the id (and the session, which a rotation changes) of each row, as
    JSON text: equal only if every value and its type (int, float, text) are."""
    return [json.dumps({k: v for k, v in m.items() if k not in ("id", "session_id")}, sort_keys=True)
            for m in rows]


def everything(store):
    """The whole store as data, to prove that a refused write wrote nothing: every session,
    message and usage row (the export, its header stamped by the test's clock) and every lease."""
    records = list(store.export())
    leases = [store.compaction_lease(r["session"]["id"]) for r in records if r["type"] == "session"]
    return records, leases


TAIL = [
    user("während der Zusammenfassung: 東京 ✓", uid="tail-1", timestamp=1_800_000_000.123456789),
    assistant(None, uid="tail-2", tool_calls=[{"id": "c1", "type": "function",
                                               "function": {"name": "read", "arguments": "{\"p\": 1}"}}],
              reasoning="think 🤔", finish_reason="tool_calls", token_count=17),
    {"role": "tool", "uid": "tail-3", "content": "out\x00put\r\n", "tool_call_id": "c1", "tool_name": "read"},
    user([{"type": "text", "text": "part one"}, {"type": "image_url", "image_url": {"url": "x"}}], uid="tail-4"),
    user("a notification", uid="tail-5", display_kind="internal_notification"),
]


@pytest.fixture
def sid(store):
    s = store.create_session("gateway", title="Kyoto trip", session_key="agent:main:telegram:dm:42",
                             user_id="u1", chat_id="42", chat_type="dm", model="m1", metadata={"k": 1})
    store.append(s.id, [user(f"old question {i}", uid=f"old-{i}") if i % 2 == 0
                        else assistant(f"old answer {i}", uid=f"old-{i}") for i in range(10)])
    return s.id


# --- S-02 Appends never wait for compaction ------------------------------------------------


def test_s02_appends_are_never_fenced_by_an_open_compaction(store, sid):
    """Every append completes while a compaction holds its lease and its summariser is still
    writing (held on an Event the test sets only afterwards): an order of events, not a
    latency. An append that waited for the compaction would never complete."""
    leased, summary_written = threading.Event(), threading.Event()
    published = []

    def compactor():
        lease = store.begin_compaction(sid, holder="slow summariser")
        leased.set()
        summary_written.wait()  # the model is writing the summary
        published.append(store.commit_compaction(lease, summary()))

    def writer(name):
        for i in range(20):
            store.append(sid, user(f"{name} {i}", uid=f"{name}-{i}"))

    summariser = threading.Thread(target=compactor)
    summariser.start()
    try:
        assert leased.wait(60), "the compaction never took its lease"
        threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(3)]
        for t in threads:
            t.start()
        hung = time.monotonic() + 120  # a bound on a hang, not on a latency
        for t in threads:
            t.join(max(0.0, hung - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "an append waited for the compaction"
        # Every append was stored while the lease was held and the summary not yet written.
        assert not summary_written.is_set() and published == []
        assert store.compaction_lease(sid).holder == "slow summariser"
        assert store.get_session(sid).message_count == 70
        with pytest.raises(CompactionBusy) as refused:  # a lease only keeps compactions apart
            store.begin_compaction(sid)
        assert refused.value.cause is Cause.COMPRESSION_BUSY
        assert "slow summariser" in str(refused.value)
    finally:
        summary_written.set()
        summariser.join(120)
    assert len(published) == 1
    after = [m.uid for m in store.transcript(sid)][1:]  # the summary, then every append made meanwhile
    for n in range(3):
        assert [u for u in after if u.startswith(f"w{n}-")] == [f"w{n}-{i}" for i in range(20)]
    assert len(after) == 60


# --- S-03 Appends made during a compaction survive it --------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_s03_rows_appended_during_a_compaction_survive_it_byte_for_byte(store, sid, mode, stored_rows):
    lease = store.begin_compaction(sid)
    assert lease.watermark == max(m.id for m in store.transcript(sid))
    store.append(sid, TAIL)
    before = every_column(stored_rows(store, sid)[10:])
    activity = store.get_session(sid).last_activity_at

    live = store.commit_compaction(lease, summary(uid="sum-1"), mode=mode)

    rows = stored_rows(store, live.id)
    assert [m.uid for m in store.transcript(live.id)] == ["sum-1"] + [m["uid"] for m in TAIL]
    assert every_column(rows[-len(TAIL):]) == before  # every column but the id
    assert [m["id"] for m in rows] == sorted(m["id"] for m in rows)
    assert rows[-len(TAIL) - 1]["uid"] == "sum-1"
    assert live.message_count == 1 + len(TAIL)
    assert live.tool_call_count == 1
    assert live.last_activity_at == activity
    archived = store.transcript(sid, include_compacted=True)
    assert [m.uid for m in archived if m.state == "compacted"] == [f"old-{i}" for i in range(10)]


def test_s03_the_watermark_is_read_in_the_database_when_the_lease_is_taken(store, sid, open_backend):
    other = open_backend()  # a second handle: the same store, its own view
    [late] = other.append(sid, user("just before", uid="jb"))
    lease = store.begin_compaction(sid)
    assert lease.watermark == late.id


def test_s03_an_expired_lease_publishes_nothing(store, sid, clock):
    lease = store.begin_compaction(sid, ttl=60)
    store.append(sid, user("during", uid="during"))
    clock.advance(61)
    snapshot = everything(store)
    for mode in MODES:
        with pytest.raises(LeaseLost) as lost:
            store.commit_compaction(lease, summary(), mode=mode)
        assert "expired" in str(lost.value) and "nothing was written" in str(lost.value)
    assert everything(store) == snapshot
    with pytest.raises(LeaseLost):
        store.refresh_compaction(lease)


def test_s03_a_lease_taken_over_cannot_publish_a_stale_compaction(store, sid, clock):
    stale = store.begin_compaction(sid, ttl=10)
    clock.advance(11)
    fresh = store.begin_compaction(sid, holder="second")  # the expired lease is reclaimed
    assert fresh.token > stale.token
    clock.advance(-11)  # even back inside the old TTL, the old token is fenced off
    snapshot = everything(store)
    with pytest.raises(LeaseLost, match="taken over"):
        store.commit_compaction(stale, summary(), mode="rotate")
    assert everything(store) == snapshot
    store.abort_compaction(stale)  # aborting a lost lease does not touch the live one
    assert store.compaction_lease(sid).token == fresh.token
    store.commit_compaction(fresh, summary(uid="fresh"))
    assert store.compaction_lease(sid) is None


def test_s03_a_refreshed_lease_outlives_its_first_ttl(store, sid, clock):
    lease = store.begin_compaction(sid, ttl=30)
    clock.advance(20)
    lease = store.refresh_compaction(lease)
    clock.advance(20)
    live = store.commit_compaction(lease, summary())
    assert live.message_count == 1


# --- S-04 Compaction keeps history ----------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_s04_archived_originals_stay_stored_readable_and_searchable(store, sid, mode):
    store.append(sid, user("the zebra crossing question", uid="zebra"))
    lease = store.begin_compaction(sid)
    live = store.commit_compaction(lease, summary("they talked about Kyoto"), mode=mode)
    assert [m.uid for m in store.transcript(live.id)] == [store.transcript(live.id)[0].uid]
    archived = store.transcript(sid, include_compacted=True)
    assert {m.uid for m in archived if m.state == "compacted"} >= {f"old-{i}" for i in range(10)} | {"zebra"}
    hits = store.search("zebra")
    assert [(h.uid, h.state) for h in hits] == [("zebra", "compacted")]


def test_s04_rewound_rows_are_kept_but_never_shown_or_searched(store, sid, stored_rows):
    first = store.transcript(sid)[3]
    assert store.rewind(sid, first.id) == 6
    assert [m.uid for m in store.transcript(sid, include_compacted=True)] == [f"old-{i}" for i in range(4)]
    kept = stored_rows(store, sid)
    assert [m["state"] for m in kept] == ["active"] * 4 + ["rewound"] * 6
    found = {h.uid for h in store.search("answer", limit=100)}
    assert found == {"old-1", "old-3"}  # old-5, old-7, old-9 were rewound
    assert store.get_session(sid).message_count == 4
    assert store.restore_rewound(sid) == 6
    assert [m.uid for m in store.transcript(sid)] == [f"old-{i}" for i in range(10)]
    assert {h.uid for h in store.search("answer", limit=100)} == {f"old-{i}" for i in range(1, 10, 2)}


# --- S-05 Writing to a session closed by rotation -------------------------------------------


def test_s05_a_late_write_to_a_rotated_parent_lands_once_on_the_live_tip_across_hops(store, sid, lineage_rows):
    ids = [sid]
    for hop in range(3):
        lease = store.begin_compaction(ids[-1])
        ids.append(store.commit_compaction(lease, summary(f"hop {hop}", uid=f"sum-{hop}"), mode="rotate").id)
    rows = store.append(sid, [user("late from the first session", uid="late-1")])
    assert [m.session_id for m in rows] == [ids[-1]]
    store.append(ids[1], user("late from the second", uid="late-2"))
    store.append(sid, [user("late from the first session", uid="late-1")])  # a retry: stored once
    uids = [m["uid"] for m in lineage_rows(store, sid)]
    assert uids.count("late-1") == 1 and uids.count("late-2") == 1
    assert [m.uid for m in store.transcript(ids[-1])] == ["sum-2", "late-1", "late-2"]
    assert store.tip(sid).id == ids[-1]
    assert [s.id for s in store.lineage(ids[2])] == ids


def test_s05_with_no_live_tip_a_late_write_fails_closed_and_says_to_refresh(store, sid):
    lease = store.begin_compaction(sid)
    child = store.commit_compaction(lease, summary(), mode="rotate")
    store.delete_session(child.id)  # the continuation is gone
    with pytest.raises(CompressionClosed) as closed:
        store.append(sid, user("late"))
    assert closed.value.cause is Cause.COMPRESSION_CLOSED
    text = str(closed.value).lower()
    assert "refresh" in text and "disk" not in text and "space" not in text
    assert store.transcript(sid) == []

    other = store.create_session("cli")
    store.end_session(other.id, "compression")  # closed by compression, never continued
    with pytest.raises(CompressionClosed):
        store.append(other.id, user("late"))


def test_s05_a_late_write_follows_the_live_continuation_not_a_dead_end(store, sid):
    lease = store.begin_compaction(sid)
    child = store.commit_compaction(lease, summary(uid="s1"), mode="rotate")
    dead = store.create_session("cli", parent_session_id=sid, parent_relation="compression")
    store.end_session(dead.id, "compression")
    [row] = store.append(sid, user("late", uid="late"))
    assert row.session_id == child.id == store.tip(sid).id


# --- S-06 Rotation clones only the true tail ------------------------------------------------


def test_s06_rotation_moves_the_true_tail_once_and_never_duplicates_the_rotators_own_rows(store, sid, lineage_rows):
    in_memory = [m.to_dict() for m in store.transcript(sid)]  # what the agent holds
    lease = store.begin_compaction(sid, holder="agent")
    store.append(sid, user("another writer, during the summary", uid="other-1"))
    mine = [assistant("flushed by the rotator right before publishing", uid="mine-1")]
    store.append(sid, mine)  # the rotator flushes its pending rows first...
    compacted = [summary("the gist", uid="gist")] + mine  # ...and they are part of its new list
    child = store.commit_compaction(lease, compacted, mode="rotate")

    rows = lineage_rows(store, sid)
    uids = [m["uid"] for m in rows]
    assert len(uids) == len(set(uids))
    assert [m.uid for m in store.transcript(child.id)] == ["gist", "other-1", "mine-1"]
    assert [m.uid for m in store.transcript(sid, include_compacted=True)] == [f"old-{i}" for i in range(10)]
    # After rotating, the agent re-flushes everything it holds to the id it knows: nothing new.
    store.append(sid, in_memory + compacted)
    assert [m["uid"] for m in lineage_rows(store, sid)] == uids


@pytest.mark.parametrize("mode", MODES)
def test_s06_a_summary_keeps_recent_messages_verbatim_by_uid_without_copying_them(store, sid, mode, lineage_rows):
    keep = [m.to_dict() for m in store.transcript(sid)[-2:]]
    lease = store.begin_compaction(sid)
    live = store.commit_compaction(lease, [summary(uid="gist"), *keep], mode=mode)
    assert [m.uid for m in store.transcript(live.id)] == ["gist", "old-8", "old-9"]
    uids = [m["uid"] for m in lineage_rows(store, sid)]
    assert sorted(uids) == sorted({*uids}) and len(uids) == 11


@pytest.mark.parametrize("mode", MODES)
def test_s06_appends_after_a_summary_that_ends_with_a_kept_message_number_on_from_the_summary(store, sid, mode):
    """A kept message takes the summary's seq: an append numbers its row one past the
    session's last, and a kept row that kept its old seq would send the numbering back to
    a seq an earlier row holds (found by the lineage model after a rewind, a compaction
    that kept a message, a restore and a second rewind)."""
    newest = store.transcript(sid)[-1]
    keep = store.transcript(sid)[1].to_dict()
    lease = store.begin_compaction(sid)
    live = store.commit_compaction(lease, [summary(uid="gist"), keep], mode=mode)
    assert [m.seq for m in store.transcript(live.id)] == [newest.seq, newest.seq]
    [after] = store.append(live.id, user("and then", uid="after"))
    assert after.seq == newest.seq + 1
    kept = store.transcript(live.id)[1]
    assert store.rewind(live.id, kept.id) == 1  # `after` rewound: the kept row is the live end
    [later] = store.append(live.id, user("later still", uid="later"))
    assert later.seq == newest.seq + 2
    report = store.verify()
    assert report.ok, report.problems


# --- A summary stands for the live conversation ---------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("state", ["rewound", "compacted"])
def test_a_summary_made_of_a_rewound_message_is_refused_and_leaves_the_conversation_live(
        store, sid, mode, state, clock):
    """A summary message becomes the live conversation: one stored rewound or compacted (a
    row of an export, say, handed back as the summary) would archive every message and show
    nothing in their place."""
    lease = store.begin_compaction(sid)
    snapshot = everything(store)
    with pytest.raises(InvalidInput, match=f"summary message 0: a summary message must be active, not {state}"):
        store.commit_compaction(lease, [summary(uid="gist", state=state), summary(uid="gist-2")], mode=mode)
    assert everything(store) == snapshot
    assert [m.uid for m in store.transcript(sid)] == [f"old-{i}" for i in range(10)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("state", ["rewound", "compacted"])
def test_a_summary_keeping_a_message_that_is_no_longer_live_is_refused_and_leaves_the_conversation_live(
        store, sid, mode, state, clock):
    """A summary keeps a stored message verbatim by its uid; kept in the state it has, a
    rewound one (undone before the summary) or one a compaction archived would be hidden
    with the summary, and the live conversation would be empty."""
    held = store.transcript(sid)[-1].to_dict()  # what the agent still holds, as it was
    if state == "rewound":
        store.rewind(sid, store.transcript(sid)[-2].id)
    else:
        store.commit_compaction(store.begin_compaction(sid), summary(uid="first"))
    live = [m.uid for m in store.transcript(sid)]
    lease = store.begin_compaction(sid)
    snapshot = everything(store)
    with pytest.raises(MessageConflict, match=f"summary message 1: uid 'old-9' is a {state} message"):
        store.commit_compaction(lease, [summary(uid="gist"), held], mode=mode)
    assert everything(store) == snapshot
    assert [m.uid for m in store.transcript(sid)] == live != []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kept", [False, True], ids=["new", "kept"])
def test_a_uid_twice_in_a_summary_is_refused_as_bad_input_naming_the_message(store, sid, mode, kept, clock):
    """Refused before the backend sees it: one uid is one row, and twice it would meet the
    store's uniqueness as a raw storage error."""
    twice = store.transcript(sid)[-1].to_dict() if kept else summary(uid="gist-2")
    lease = store.begin_compaction(sid)
    snapshot = everything(store)
    with pytest.raises(InvalidInput, match=f"summary message 2: uid '{twice['uid']}' appears twice in the summary"):
        store.commit_compaction(lease, [summary(uid="gist"), twice, twice], mode=mode)
    assert everything(store) == snapshot
    store.commit_compaction(lease, [summary(uid="gist"), twice], mode=mode)  # the lease still holds


# --- S-08 Background writes are not activity --------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_s08_compaction_rewind_and_restore_never_move_the_activity_clock(store, sid, mode, clock):
    activity = store.get_session(sid).last_activity_at
    lease = store.begin_compaction(sid)
    clock.advance(10)  # the compaction happens later than the last activity
    live = store.commit_compaction(lease, summary(timestamp=clock.now + 100), mode=mode)
    assert store.get_session(sid).last_activity_at == activity
    assert live.last_activity_at == activity
    store.rewind(live.id, 0)
    store.restore_rewound(live.id)
    assert store.get_session(live.id).last_activity_at == activity


# --- S-09 Internal turns are marked -------------------------------------------------------------


def test_s09_resume_replays_an_internal_notification_as_a_plain_user_turn(store, sid):
    store.append(sid, [
        user("[background task finished: tests pass]", uid="n1", display_kind="internal_notification"),
        assistant(None, uid="a1", tool_calls=[{"id": "c9", "type": "function",
                                               "function": {"name": "ls", "arguments": "{}"}}]),
        {"role": "tool", "content": "a.txt", "tool_call_id": "c9", "tool_name": "ls", "uid": "t1"},
    ])
    conversation = store.resume(sid)
    assert conversation[-3:] == [
        {"role": "user", "content": "[background task finished: tests pass]"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "content": "a.txt", "tool_call_id": "c9", "name": "ls"},
    ]
    assert "internal_notification" not in json.dumps(conversation)


# --- S-42 Size guards -----------------------------------------------------------------------------


def test_s42_resume_refuses_a_session_over_the_guard_and_names_the_streaming_export(store, sid):
    with pytest.raises(SessionTooLarge) as refused:
        store.resume(sid, max_messages=9)
    text = str(refused.value)
    assert "9" in text and "sessiondb sessions export" in text and "max_messages=0" in text
    assert refused.value.limit == 9 and refused.value.count == 10
    assert len(store.resume(sid, max_messages=10)) == 10
    assert len(store.resume(sid, max_messages=0)) == 10  # 0 disables the guard


def test_s42_the_default_guard_is_twenty_thousand_messages(store):
    s = store.create_session("cli")
    store.append(s.id, [user(f"m{i}") for i in range(20_001)])
    with pytest.raises(SessionTooLarge, match="20,000"):
        store.resume(s.id)
    lease = store.begin_compaction(s.id)
    store.commit_compaction(lease, summary(), mode="rotate")
    assert store.resume(s.id) == [summary()]  # the tip is small again


def test_s42_the_refusal_names_the_profile_in_the_export_command(open_backend):
    store = open_backend(profile="work")
    s = store.create_session("cli")
    store.append(s.id, [user("a"), user("b")])
    with pytest.raises(SessionTooLarge, match=f"sessiondb -p work sessions export --session {s.id} -o FILE"):
        store.resume(s.id, max_messages=1)
