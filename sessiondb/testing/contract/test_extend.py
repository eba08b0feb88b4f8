"""Store.extend: what a caller makes of a conversation's end, appended in one unit of work.

An adapter whose SDK call is one operation (the Agents SDK's add_items) makes one store
call: the session created on first write, the tip's newest messages read with its row
locked, and what the caller built from them stored after them, or nothing at all.
"""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput, NotFound


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def rotate(store, sid):
    lease = store.begin_compaction(sid)
    return store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate").id


class Seen:
    """A build that records what it was shown and appends `make(tail)`."""

    def __init__(self, make=lambda tail: [user("next")]):
        self.make, self.calls = make, []

    def __call__(self, root, tail, history):
        self.calls.append((root.id, [m.content for m in tail], [m.content for m in history()]))
        return self.make(tail)


def test_a_missing_session_is_created_from_create_and_the_built_messages_land_in_it(store):
    build = Seen()
    stored = store.extend("agents-1", build, newest=3, create={"source": "openai-agents", "metadata": {"k": "v"}})
    assert [(m.session_id, m.content, m.seq) for m in stored] == [("agents-1", "next", 1)]
    session = store.get_session("agents-1")
    assert (session.source, session.metadata, session.message_count) == ("openai-agents", {"k": "v"}, 1)
    assert build.calls[-1] == ("agents-1", [], [])


def test_without_create_a_missing_session_is_not_found_and_nothing_is_created(store):
    with pytest.raises(NotFound):
        store.extend("nobody", Seen(), newest=1)
    with pytest.raises(NotFound):
        store.get_session("nobody")


def test_build_sees_the_newest_live_messages_oldest_first_and_its_messages_follow_them(store):
    sid = store.create_session("cli").id
    store.append(sid, [user("one"), user("two"), user("three")])
    build = Seen(lambda tail: [user(f"after {tail[-1].content}")])
    stored = store.extend(sid, build, newest=2)
    assert build.calls[-1][1] == ["two", "three"]
    assert [m.content for m in store.transcript(sid)] == ["one", "two", "three", "after three"]
    assert stored[0].seq == 4


def test_after_a_rotation_build_sees_the_tip_and_its_messages_land_there(store):
    sid = store.create_session("cli").id
    store.append(sid, [user("before")])
    tip = rotate(store, sid)
    build = Seen()
    stored = store.extend(sid, build, newest=5)
    assert stored[0].session_id == tip
    assert build.calls[-1][1] == ["summary"]
    assert "before" in build.calls[-1][2]  # history reads the whole lineage, compacted rows too


def test_a_bad_built_message_refuses_the_whole_unit_and_a_session_it_would_create(store):
    with pytest.raises(InvalidInput):
        store.extend("refused", Seen(lambda tail: [user("fine"), {"role": "nobody", "content": "x"}]), newest=1,
                     create={"source": "openai-agents"})
    with pytest.raises(NotFound):
        store.get_session("refused")


def test_nothing_built_is_nothing_appended(store):
    sid = store.create_session("cli").id
    store.append(sid, [user("one")])
    assert store.extend(sid, Seen(lambda tail: []), newest=1) == []
    assert [m.content for m in store.transcript(sid)] == ["one"]


def test_a_build_that_repeats_a_stored_uid_stores_nothing_twice(store):
    sid = store.create_session("cli").id
    first = store.extend(sid, Seen(lambda tail: [user("hi", uid="u-1")]), newest=1)
    again = store.extend(sid, Seen(lambda tail: [user("hi", uid="u-1")]), newest=1)
    assert [m.id for m in again] == [m.id for m in first]
    assert store.get_session(sid).message_count == 1


def test_a_metadata_patch_lands_with_the_messages_in_the_named_session_or_not_at_all(store):
    sid = store.create_session("adk", metadata={"kept": 1, "dropped": 2}).id
    tip = rotate(store, sid)
    stored = store.extend(sid, Seen(), newest=1, metadata={"state": "after", "dropped": None})
    assert stored[0].session_id == tip  # the messages at the tip, the patch where the caller named
    assert store.get_session(sid).metadata == {"kept": 1, "state": "after"}
    assert store.get_session(tip).metadata == {"kept": 1, "dropped": 2}  # a rotation copies; the patch is not its

    def refused(tail):
        raise InvalidInput("stale")
    with pytest.raises(InvalidInput, match="stale"):
        store.extend(sid, Seen(refused), newest=1, metadata={"state": "never"})
    assert store.get_session(sid).metadata["state"] == "after"
    assert store.extend(sid, Seen(lambda tail: []), newest=1, metadata={"state": "alone"}) == []
    assert store.get_session(sid).metadata["state"] == "alone"  # nothing to append: the patch still lands
    first = store.extend("new", Seen(), newest=1, create={"source": "adk", "metadata": {"a": 1}}, metadata={"b": 2})
    assert (first[0].session_id, store.get_session("new").metadata) == ("new", {"a": 1, "b": 2})


def test_patches_of_other_sessions_land_with_the_messages_or_not_at_all(store):
    sid = store.create_session("adk").id
    app = store.create_session("adk-state", metadata={"theme": "light", "lang": "en"}).id
    user_home = store.create_session("adk-state").id
    stored = store.extend(sid, Seen(), newest=1, metadata={"own": 1},
                          metadata_of={user_home: {"visits": 1}, app: {"theme": "dark", "lang": None}})
    assert [m.content for m in stored] == ["next"]
    found = store.get_sessions([sid, app, user_home])
    assert [found[s].metadata for s in (sid, app, user_home)] == [{"own": 1}, {"theme": "dark"}, {"visits": 1}]

    def refused(tail):
        raise InvalidInput("stale")
    with pytest.raises(InvalidInput, match="stale"):
        store.extend(sid, Seen(refused), newest=1, metadata_of={app: {"theme": "never"}})
    with pytest.raises(NotFound, match="nobody"):  # one session missing: nothing lands, anywhere
        store.extend(sid, Seen(), newest=1, metadata_of={app: {"theme": "never"}, "nobody": {"x": 1}})
    with pytest.raises(InvalidInput, match="metadata patch"):  # one patch too big for its session: the same
        store.extend(sid, Seen(), newest=1, metadata_of={app: {"theme": "never"}, user_home: {"big": "x" * 200_000},
                                                          "z-home": {}})
    assert store.get_session(app).metadata == {"theme": "dark"}
    assert [m.content for m in store.transcript(sid)] == ["next"]


def test_patches_of_the_extended_conversations_own_sessions_are_refused(store):
    root = store.create_session("adk", metadata={"a": 1}).id
    store.append(root, [user("before")])
    tip = rotate(store, root)
    for named, other in ((root, tip), (tip, root)):  # its rows would be locked in two orders
        with pytest.raises(InvalidInput, match="a session of the conversation being extended"):
            store.extend(named, Seen(), newest=1, metadata_of={other: {"b": 2}})
    assert [m.content for m in store.transcript(tip)] == ["summary"]
    assert store.get_session(root).metadata == store.get_session(tip).metadata == {"a": 1}


@pytest.mark.parametrize("arguments, named", [
    ({"metadata_of": ["not", "a", "mapping"]}, "metadata_of"),
    ({"metadata_of": {"fresh": {"a": 1}}}, "metadata_of names the extended session"),
    ({"metadata_of": {f"s{i}": {} for i in range(17)}}, "at most 16"),
    ({"metadata_of": {"other": "not a patch"}}, "metadata patch"),
    ({"metadata_of": {"": {}}}, "session"),
    ({"build": "not callable"}, "build"),
    ({"metadata": ["not", "a", "mapping"]}, "metadata"),
    ({"metadata": {"big": "x" * 10**6}}, "metadata"),
    ({"newest": -1}, "newest"),
    ({"newest": 10**6}, "newest"),
    ({"create": {"source": "x", "session_id": "other"}}, "create"),
    ({"create": ["source"]}, "create"),
])
def test_bad_arguments_are_refused_before_anything_is_written(store, arguments, named):
    call = {"build": Seen(), "newest": 1, "create": {"source": "cli"}, **arguments}
    with pytest.raises(InvalidInput, match=named):
        store.extend("fresh", call.pop("build"), **call)
    with pytest.raises(NotFound):
        store.get_session("fresh")
