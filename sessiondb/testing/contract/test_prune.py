"""Prune, on every backend (S-40): a one-off removal, session by session, of what has been
inactive for a period or was opened by a key and never used; pinned and archived sessions
kept unless asked for, held ones always, each session judged again as it goes."""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput, NotFound
from sessiondb.store import retention

DAY = 86400.0


def gone(store, session_id):
    with pytest.raises(NotFound):
        store.get_session(session_id)
    return True


def test_never_active_takes_only_old_unused_keyed_open_sessions(store, clock):
    key = "agent:main:telegram:dm:{}".format
    unused = store.create_session("gateway", session_key=key(1)).id
    used = store.create_session("gateway", session_key=key(3)).id
    store.append(used, {"role": "user", "content": "hello"})
    titled = store.create_session("gateway", session_key=key(4), title="kept").id
    pinned = store.create_session("gateway", session_key=key(5)).id
    store.set_flags(pinned, pinned=True)
    with_usage = store.create_session("gateway", session_key=key(6)).id
    store.record_usage(with_usage, model="m", input_tokens=1)
    ended = store.create_session("gateway", session_key=key(7)).id
    store.end_session(ended, "user_reset")
    keyless = store.create_session("cli").id
    clock.advance(35 * DAY)
    young = store.create_session("gateway", session_key=key(2)).id
    clock.advance(10 * DAY)

    assert store.prune(never_active=True, dry_run=True).sessions == [unused]
    assert store.get_session(unused)  # a dry run removes nothing
    report = store.prune(never_active=True)
    assert report.action == "prune" and not report.dry_run and report.sessions == [unused]
    assert gone(store, unused)
    for sid in (young, used, titled, pinned, with_usage, ended, keyless):
        assert store.get_session(sid)


def test_older_than_keeps_pinned_and_archived_unless_included(store, clock):
    plain, pinned, archived = (store.create_session("cli").id for _ in range(3))
    store.set_flags(pinned, pinned=True)
    store.set_flags(archived, archived=True)
    clock.advance(100 * DAY)
    recent = store.create_session("cli").id

    assert store.prune(older_than=90 * DAY).sessions == [plain]
    assert gone(store, plain) and store.get_session(recent)
    assert sorted(store.prune(older_than=90 * DAY, include_pinned=True, include_archived=True).sessions) == sorted(
        [pinned, archived])


def test_a_session_is_judged_by_its_last_activity(store, clock):
    spoken = store.create_session("cli").id
    clock.advance(100 * DAY)
    store.append(spoken, {"role": "user", "content": "still here"})
    clock.advance(DAY)
    assert store.prune(older_than=90 * DAY).sessions == []
    assert [m.content for m in store.transcript(spoken)] == ["still here"]


def test_messages_usage_and_routing_entries_go_with_the_session(store, clock):
    old = store.create_session("gateway", session_key="agent:main:cli:dm:old").id
    store.append(old, [{"role": "user", "content": "pruned words"}, {"role": "assistant", "content": "gone"}])
    store.record_usage(old, model="m", input_tokens=3)
    store.routing.put("agent:main:cli:dm:old", old, "main")
    clock.advance(100 * DAY)
    kept = store.create_session("gateway", session_key="agent:main:cli:dm:kept").id
    store.routing.put("agent:main:cli:dm:kept", kept, "main")

    assert store.prune(older_than=90 * DAY).sessions == [old]
    assert gone(store, old) and store.search("pruned") == []
    assert store.routing.get("agent:main:cli:dm:old") is None
    assert store.routing.get("agent:main:cli:dm:kept").session_id == kept


def test_a_session_under_a_legal_hold_is_kept(store, clock):
    held = store.create_session("cli", user_id="ann").id
    by_id = store.create_session("cli").id
    free = store.create_session("cli").id
    store.hold(user_id="ann", reason="litigation")
    store.hold(session_id=by_id, reason="audit")
    clock.advance(100 * DAY)
    assert store.prune(older_than=90 * DAY).sessions == [free]
    assert store.get_session(held) and store.get_session(by_id)


def test_a_session_used_after_the_first_look_is_left(store, clock, monkeypatch):
    """The removal judges each session again in its own transaction: one spoken to between
    the look and the removal stays."""
    unused = store.create_session("gateway", session_key="agent:main:cli:dm:late").id
    clock.advance(45 * DAY)
    looked = retention._pruned

    def look_then_speak(rows, command, among):
        found = looked(rows, command, among)
        if among is None:
            spoken.append(found)
        return found

    spoken: list[list[str]] = []
    monkeypatch.setattr(retention, "_pruned", look_then_speak)
    real_write = store.backend.write

    def write(work):
        if spoken and spoken[0] == [unused] and len(spoken) == 1:
            spoken.append(["spoken"])
            store.append(unused, {"role": "user", "content": "hello, at last"})
        return real_write(work)

    monkeypatch.setattr(store.backend, "write", write)
    report = store.prune(never_active=True)
    assert spoken[0] == [unused] and spoken[1] == ["spoken"]  # the look saw it, then it was used
    assert report.sessions == [] and store.transcript(unused)[0].content == "hello, at last"


def test_bad_arguments_are_refused_and_remove_nothing(store, clock):
    sid = store.create_session("cli").id
    clock.advance(100 * DAY)
    with pytest.raises(InvalidInput, match="say what to prune"):
        store.prune()
    for bad in (-1, float("nan"), float("inf"), "90", True):
        with pytest.raises(InvalidInput):
            store.prune(older_than=bad)
    with pytest.raises(InvalidInput):
        store.prune(never_active="yes")
    assert store.get_session(sid)
