"""S-05 fails closed: a late write to a session closed by rotation lands on its live
continuation, and when that continuation has ended, for any reason, it is refused with the
cause that says to refresh, never stored where nobody reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiondb import Cause, CompressionClosed, NotFound
from sessiondb.guidance import for_error


def user(text):
    return {"role": "user", "content": text}


def rotate(store, sid):
    lease = store.begin_compaction(sid)
    return store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate").id


def everything(store, sid):
    return [(m.session_id, m.uid) for s in store.lineage(sid) for m in store.transcript(s.id, include_compacted=True)]


@pytest.mark.parametrize("reason", ["user_closed", "idle_reset", "stale_turn"])
def test_a_late_write_whose_continuation_ended_for_another_reason_is_refused(store, reason):
    sid = store.create_session("cli").id
    store.append(sid, user("before the rotation"))
    child = rotate(store, sid)
    grandchild = rotate(store, child)
    store.end_session(grandchild, reason)
    before = everything(store, sid)

    with pytest.raises(CompressionClosed) as refused:
        store.append(sid, user("late"))

    assert refused.value.cause is Cause.COMPRESSION_CLOSED
    text = str(refused.value)
    assert "refresh" in text and grandchild in text and reason in text and "disk" not in text.lower()
    assert everything(store, sid) == before
    advice = for_error(refused.value, db_path=Path("/h/state.db"), profile=None)
    assert "refresh" in advice.message and advice.http_status == 409
    with pytest.raises(CompressionClosed):
        store.append(child, user("late, from the middle of the chain"))
    with pytest.raises(CompressionClosed):
        store.begin_compaction(sid)
    assert everything(store, sid) == before


def test_a_late_write_lands_again_once_the_continuation_is_reopened(store):
    sid = store.create_session("cli").id
    child = rotate(store, sid)
    store.end_session(child, "user_closed")
    store.reopen_session(child)
    [row] = store.append(sid, user("late"))
    assert row.session_id == child


def test_restoring_rewound_messages_of_a_rotated_session_acts_on_its_live_tip(store):
    sid = store.create_session("cli").id
    store.append(sid, [user("kept"), user("undone before the rotation")])
    store.rewind(sid, store.transcript(sid)[0].id)
    child = rotate(store, sid)
    store.append(child, [user("after"), user("undone after the rotation")])
    store.rewind(child, store.transcript(child)[-2].id)

    assert store.restore_rewound(sid) == 1
    assert [m.content for m in store.transcript(child)] == ["summary", "after", "undone after the rotation"]
    assert store.transcript(sid) == []  # the rotated session's rewound row stays rewound
    assert store.verify().ok
    store.end_session(child, "user_closed")
    with pytest.raises(CompressionClosed):
        store.restore_rewound(sid)


def test_a_rewind_addressed_to_a_rotated_session_undoes_the_conversation_at_its_live_tip(store):
    sid = store.create_session("cli").id
    [archived] = store.append(sid, user("archived by the rotation"))
    child = rotate(store, sid)
    store.append(child, [user("after"), user("more")])

    assert store.rewind(sid, 0) == 3  # the summary and the two after it, in one call
    assert store.transcript(child) == []
    assert [(m.content, m.state) for m in store.transcript(sid, include_compacted=True)] == [
        ("archived by the rotation", "compacted")]  # the rotated session's rows stay as the compaction left them
    assert store.restore_rewound(sid) == 3

    after = store.transcript(child)[1]
    assert store.rewind(sid, after.id) == 1  # a message of the tip names where the rewind starts
    with pytest.raises(NotFound) as refused:
        store.rewind(sid, archived.id)  # a message of the rotated session: not in the conversation's tip
    assert child in str(refused.value) and "tip=True" in str(refused.value)
    assert [m.content for m in store.transcript(child)] == ["summary", "after"]
    assert store.verify().ok
    # A tip that has ended is still the conversation its reads show: a rewind undoes it there,
    # storing nothing where no reader looks; only a conversation with no session left refuses.
    store.end_session(child, "user_closed")
    assert store.rewind(sid, 0) == 2 and store.transcript(child) == []
    store.delete_session(child)
    with pytest.raises(CompressionClosed):
        store.rewind(sid, 0)
