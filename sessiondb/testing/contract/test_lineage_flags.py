"""Flags belong to the conversation (S-41): pin, archive and hide apply to every session of
a compaction chain, whichever is named, and a listing never shows the ancestors of a hidden
tip; a branch is another conversation and keeps its own flags."""

from __future__ import annotations

import pytest


def rotate(store, sid):
    lease = store.begin_compaction(sid)
    return store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate").id


@pytest.fixture
def chain(store):
    """root -> middle -> tip by rotation, plus a dead-end continuation of the root and a branch."""
    root = store.create_session("gateway", title="a long chat").id
    store.append(root, [{"role": "user", "content": f"turn {i}"} for i in range(3)])
    dead_end = store.create_session("gateway", parent_session_id=root, parent_relation="compression").id
    store.end_session(dead_end, "compression")
    middle = rotate(store, root)
    tip = rotate(store, middle)
    first = store.transcript(root, include_compacted=True)[0].id
    branch = store.branch(root, first).id
    return {"root": root, "dead_end": dead_end, "middle": middle, "tip": tip, "branch": branch}


def listed(store, **options):
    return {s.id for s in store.list_sessions(limit=1000, **options).items}


@pytest.mark.parametrize("flag", ["pinned", "archived", "hidden"])
@pytest.mark.parametrize("named", ["root", "middle", "tip"])
def test_a_flag_set_on_any_session_of_a_chain_applies_to_the_whole_chain(store, chain, flag, named):
    conversation = {chain[k] for k in ("root", "dead_end", "middle", "tip")}
    store.set_flags(chain[named], **{flag: True})
    assert {s for s in listed(store, include_archived=True, include_hidden=True)
            if getattr(store.get_session(s), flag)} == conversation
    assert not getattr(store.get_session(chain["branch"]), flag)
    store.set_flags(chain["root"], **{flag: False})
    assert not any(getattr(store.get_session(s), flag) for s in conversation)


def test_a_listing_never_shows_the_ancestors_of_a_hidden_tip(store, chain):
    store.set_flags(chain["tip"], hidden=True)
    shown = listed(store)
    assert shown.isdisjoint({chain[k] for k in ("root", "dead_end", "middle", "tip")})
    assert chain["branch"] in shown
    assert chain["root"] in listed(store, include_hidden=True)
    store.set_flags(chain["tip"], archived=True)
    assert chain["middle"] not in listed(store, include_hidden=True)
    assert chain["middle"] in listed(store, include_hidden=True, include_archived=True)


def test_a_session_rotated_out_of_a_flagged_one_has_its_flags(store, chain):
    store.set_flags(chain["middle"], pinned=True, hidden=True)
    child = store.get_session(rotate(store, chain["tip"]))
    assert (child.pinned, child.hidden) == (True, True)
