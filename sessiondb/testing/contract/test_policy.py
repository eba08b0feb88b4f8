"""Retention rules and legal holds, on every backend: declared in the store, a dry run by
default, conversations judged whole, pinned and held ones never touched, compacted
originals losing their text but not their identity, and rules that would empty a store
refused in a sentence."""

from __future__ import annotations

import pytest

from sessiondb import Conflict, InvalidInput, NotFound

DAY = 86400.0


def said(text, **extra):
    return {"role": "user", "content": text, **extra}


@pytest.fixture
def aged(store, clock):
    """Three conversations: one idle for 100 days (rotated once), one idle for 40, one active today."""
    old = store.create_session("cli", user_id="ann")
    store.append(old.id, [said(f"old {i}", uid=f"o{i}") for i in range(3)])
    lease = store.begin_compaction(old.id)
    old_tip = store.commit_compaction(lease, {"role": "system", "content": "old gist"}, mode="rotate")
    clock.advance(60 * DAY)
    middle = store.create_session("cli", user_id="ben")
    store.append(middle.id, said("middle", uid="m0"))
    clock.advance(40 * DAY)
    new = store.create_session("telegram", user_id="cat")
    store.append(new.id, said("new", uid="n0"))
    return {"old": [old.id, old_tip.id], "middle": middle.id, "new": new.id}


def ids(report):
    return sorted(root for root, _ in report.removed)


def test_a_dry_run_is_the_default_and_removes_nothing(store, aged):
    store.set_policy(inactive_after=90 * DAY)
    report = store.apply_policy()
    assert report.dry_run and ids(report) == [aged["old"][0]] and report.sessions == 2 and report.messages == 4
    assert store.get_session(aged["old"][0]) and "would remove 1 conversation" in report.summary()


def test_a_conversation_idle_past_the_period_goes_whole_and_the_others_stay(store, aged):
    store.set_policy(inactive_after=90 * DAY)
    report = store.apply_policy(dry_run=False)
    assert report.removed == [(aged["old"][0], "inactive_after")] and report.sessions == 2
    for sid in aged["old"]:
        with pytest.raises(NotFound):
            store.get_session(sid)
    assert store.search("old") == [] and [m.uid for m in store.transcript(aged["middle"])] == ["m0"]


def test_a_conversation_is_judged_by_its_newest_activity(store, aged, clock):
    store.append(aged["old"][1], said("old, but spoken to today", uid="o9"))
    store.set_policy(inactive_after=90 * DAY)
    assert store.apply_policy(dry_run=False).removed == []


def test_keep_last_keeps_the_newest_conversations_of_the_sources_it_covers(store, aged):
    store.set_policy(keep_last=1)
    store.set_policy(source="telegram", inactive_after=1000 * DAY)  # telegram has rules of its own
    report = store.apply_policy(dry_run=False)
    assert report.removed == [(aged["old"][0], "keep_last")]
    assert store.get_session(aged["middle"]) and store.get_session(aged["new"])


def test_pinned_and_held_conversations_are_kept_and_said_to_be(store, aged):
    store.set_flags(aged["old"][1], pinned=True)
    store.hold(user_id="ben", reason="case 12")
    store.set_policy(inactive_after=30 * DAY, force=True)
    report = store.apply_policy(dry_run=False)
    assert report.removed == [] and sorted(report.kept) == sorted([(aged["old"][0], "pinned"),
                                                                   (aged["middle"], "held")])
    assert store.get_session(aged["middle"])


def test_a_held_user_is_not_forgotten_until_the_hold_is_released(store, aged):
    store.hold(user_id="ben", reason="litigation hold 7")
    with pytest.raises(Conflict, match="litigation hold 7"):
        store.forget(user_id="ben")
    assert store.get_session(aged["middle"])
    assert [h.user_id for h in store.policy().holds] == ["ben"]
    assert store.release_hold(user_id="ben") and not store.release_hold(user_id="ben")
    assert store.forget(user_id="ben").sessions == [aged["middle"]]


def test_compacted_originals_lose_their_text_and_keep_their_identity(store, clock):
    s = store.create_session("cli")
    originals = [said(f"original words {i}", uid=f"u{i}") for i in range(4)]
    store.append(s.id, originals)
    lease = store.begin_compaction(s.id)
    store.commit_compaction(lease, {"role": "system", "content": "the gist"})
    store.append(s.id, said("after", uid="after"))
    clock.advance(10 * DAY)
    store.set_policy(compacted_after=7 * DAY)
    report = store.apply_policy(dry_run=False)
    assert report.compacted_dropped == 4 and report.removed == []
    rows = store.transcript(s.id, include_compacted=True)
    assert [(m.uid, m.content) for m in rows if m.state == "compacted"] == [(f"u{i}", None) for i in range(4)]
    assert store.search("original") == []
    store.append(s.id, originals)  # a transcript handed back from before the compaction
    assert [m.content for m in store.transcript(s.id)] == ["the gist", "after"]  # nothing stored twice (S-01)
    assert store.apply_policy(dry_run=False).compacted_dropped == 0


def test_a_session_opened_by_a_key_and_never_used_goes(store, clock):
    unused = store.create_session("gateway", session_key="agent:main:cli:dm:x")
    used = store.create_session("gateway", session_key="agent:main:cli:dm:y")
    store.append(used.id, said("hello"))
    clock.advance(31 * DAY)
    store.append(used.id, said("hello again"))
    store.set_policy(never_active_after=30 * DAY)
    assert store.apply_policy(dry_run=False).removed == [(unused.id, "never_active_after")]
    assert store.get_session(used.id)


def test_rules_that_would_remove_every_conversation_are_refused(store, aged, clock):
    clock.advance(2 * DAY)
    with pytest.raises(InvalidInput, match="every one of its 3 conversation"):
        store.set_policy(inactive_after=1 * DAY)
    assert store.policy().rules == []  # nothing was changed
    store.set_policy(inactive_after=1 * DAY, force=True)
    report = store.apply_policy(dry_run=False)
    assert report.removed == [] and "every one" in report.summary()
    assert len(store.apply_policy(dry_run=False, force=True).removed) == 3


def test_the_rules_are_kept_in_the_store_and_replaced_per_source(store):
    store.set_policy(inactive_after=90 * DAY)
    store.set_policy(source="telegram", keep_last=10)
    store.set_policy(inactive_after=30 * DAY)
    assert [(p.source, p.inactive_after, p.keep_last) for p in store.policy().rules] == [
        (None, 30 * DAY, None), ("telegram", None, 10)]
    assert store.clear_policy(source="telegram") and not store.clear_policy(source="telegram")


@pytest.mark.parametrize("rules", [{}, {"inactive_after": 0}, {"inactive_after": -1}, {"inactive_after": "90d"},
                                   {"keep_last": 0}, {"keep_last": 2.5}, {"compacted_after": float("inf")},
                                   {"keep_last": 3, "source": "x\x00"}])
def test_rules_that_say_nothing_or_say_it_badly_are_refused(store, rules):
    with pytest.raises(InvalidInput):
        store.set_policy(**rules)


@pytest.mark.parametrize("named", [{}, {"user_id": "a", "session_id": "b"}, {"user_id": "a", "reason": " "},
                                   {"user_id": "a", "reason": "r" * 1001}])
def test_a_hold_names_one_user_or_session_and_says_why(store, named):
    with pytest.raises(InvalidInput):
        store.hold(**{"reason": "why", **named})


def test_a_held_session_is_neither_deleted_nor_pruned(store, aged, clock):
    store.hold(session_id=aged["middle"], reason="case 9")
    store.hold(user_id="ann", reason="case 10")
    with pytest.raises(Conflict, match="case 9"):
        store.delete_session(aged["middle"])
    with pytest.raises(Conflict, match="case 10"):
        store.delete_session(aged["old"][0])
    if hasattr(store, "prune"):  # prune is an optional capability
        assert store.prune(older_than=30 * DAY, force=True).sessions == []
    assert store.get_session(aged["middle"]) and store.get_session(aged["old"][1])
    store.release_hold(session_id=aged["middle"])
    store.delete_session(aged["middle"])
