"""SessiondbSession under the OpenAI Agents SDK's own runner, on SQLite and PostgreSQL.

The model is scripted (agents_worker.ScriptedModel); tracing is off and nothing reaches
the network.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from agents import Runner
from agents.memory import SessionABC, SessionSettings

import sessiondb
from sessiondb.adapters.openai_agents import SessiondbSession, store_session_id

sys.path.insert(0, str(Path(__file__).parent))
from agents_worker import ScriptedModel, agent, answer, script  # noqa: E402  (found through the line above)

WORKER = Path(__file__).parent / "agents_worker.py"

#: One of every item shape a session holds, as the SDK hands them over.
EVERY_SHAPE = [
    {"role": "user", "content": "a string cut inside an emoji: \ud83d"},
    {"type": "function_call_output", "call_id": "call_cut", "output": "\udc00 half a character"},
    {"role": "user", "content": "plain text from the user"},
    {"role": "system", "content": "be brief"},
    {"role": "developer", "content": [{"type": "input_text", "text": "developer note"}]},
    {"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "look at this"},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        {"type": "input_file", "file_id": "file_1", "filename": "a.pdf"}]},
    {"id": "msg_a1", "type": "message", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Über 30 °C ☀", "annotations": []},
                 {"type": "refusal", "refusal": "not that"}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "lookup",
     "arguments": "{\"topic\": \"kyoto\"}", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_1", "output": "notes on kyoto"},
    {"type": "function_call_output", "call_id": "call_2",
     "output": [{"type": "input_text", "text": "listed"}, {"type": "input_image", "image_url": "https://x/y.png"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking it over"}],
     "encrypted_content": "gAAAA=="},
    {"type": "reasoning", "id": "rs_2", "summary": []},
    {"type": "web_search_call", "id": "ws_1", "status": "completed",
     "action": {"type": "search", "query": "kyoto weather"}},
    {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refund policy"],
     "results": [{"file_id": "file_2", "score": 0.5, "text": "Refunds within 30 days"}]},
    {"type": "computer_call", "id": "cu_1", "call_id": "call_3", "status": "completed",
     "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": []},
    {"type": "computer_call_output", "call_id": "call_3",
     "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,BBBB"}},
    {"type": "custom_tool_call", "call_id": "call_4", "name": "grep", "input": "needle"},
    {"type": "custom_tool_call_output", "call_id": "call_4", "output": "found"},
    {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs", "tools": []},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque"},
    {"type": "item_reference", "id": "msg_a1"},
    {"role": "user", "content": "nested", "extra": {"z": 1, "a": [1.5, None, True, {"b": "c"}]}},
]


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    """(location, open_store options) of this test's own empty store on each backend."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_server").url(), {"schema": request.getfixturevalue("pg_schema")}
    return str(tmp_path / "agents.db"), {}


@pytest.fixture
def open_session(where):
    """Open SessiondbSessions on this test's store; all closed at the end."""
    opened = []

    def open_(session_id: str = "support-42", **options) -> SessiondbSession:
        session = SessiondbSession(session_id, where[0], **where[1], **options)
        opened.append(session)
        return session

    yield open_
    for session in opened:
        session.close()


def run(coroutine):
    return asyncio.run(coroutine)


def texts(items):
    return [json.dumps(item) for item in items]


def test_a_second_run_sees_the_first_runs_history(open_session):
    session = open_session()
    assert isinstance(session, SessionABC)
    first, second = ScriptedModel(script("one")), ScriptedModel([[answer("Still sunny.", "msg_two")]])
    result = run(Runner.run(agent(first), "What is the weather in Kyoto?", session=session))
    assert result.final_output == "answer one"
    run(Runner.run(agent(second), "And tomorrow?", session=session))

    seen = second.inputs[0]
    assert [i.get("role") or i["type"] for i in seen] == [
        "user", "function_call", "function_call_output", "assistant", "user"]
    assert seen[0]["content"] == "What is the weather in Kyoto?"
    assert seen[2]["output"] == "notes on one"
    assert seen[-1]["content"] == "And tomorrow?"
    stored = session.store.transcript(session.store_session_id)
    assert [(m.role, m.text) for m in stored] == [
        ("user", "What is the weather in Kyoto?"), ("assistant", ""), ("tool", "notes on one"),
        ("assistant", "answer one"), ("user", "And tomorrow?"), ("assistant", "Still sunny.")]
    assert stored[1].tool_calls[0]["function"]["name"] == "lookup" and stored[2].tool_call_id == "call_one"
    assert session.store.get_session("support-42").source == "openai-agents"


def test_every_item_shape_comes_back_byte_for_byte(open_session):
    session = open_session()
    run(session.add_items(EVERY_SHAPE))
    assert texts(run(session.get_items())) == texts(EVERY_SHAPE)
    assert texts(run(session.get_items(limit=3))) == texts(EVERY_SHAPE[-3:])
    assert texts(run(open_session(session_settings=SessionSettings(limit=2)).get_items())) == texts(EVERY_SHAPE[-2:])
    assert [h.role for h in run(session.search("kyoto", include_tools=True))] == ["tool"]  # the call's output
    assert [h.role for h in run(session.search("uber"))] == ["assistant"]  # the text, not the raw item
    assert [h.role for h in run(session.search("developer note"))] == ["system"]


def test_an_sdk_id_sessiondb_cannot_take_is_mapped_and_kept(open_session):
    session = open_session("tenant/7:chat\n1")
    run(session.add_items([{"role": "user", "content": "hi"}]))
    assert session.store_session_id == store_session_id("tenant/7:chat\n1") != "tenant/7:chat\n1"
    stored = session.store.get_session(session.store_session_id)
    assert stored.metadata["openai_agents_session_id"] == "tenant/7:chat\n1"
    assert texts(run(open_session("tenant/7:chat\n1").get_items())) == texts([{"role": "user", "content": "hi"}])


def test_bad_items_are_refused_and_nothing_is_written(open_session):
    session = open_session()
    with pytest.raises(sessiondb.InvalidInput, match="item 1"):
        run(session.add_items([{"role": "user", "content": "ok"}, {"role": "user", "content": object()}]))
    with pytest.raises(sessiondb.InvalidInput, match="item 0"):
        run(session.add_items(["not an item"]))
    assert run(session.get_items()) == []


def test_a_batch_lands_whole_or_not_at_all(open_session):
    session = open_session()
    said = {"id": "msg_x", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A"}]}
    run(session.add_items([said]))
    # An item the store refuses, after one it takes: the batch is refused whole.
    too_big = {**said, "content": [{"type": "output_text", "text": "B" * (sessiondb.MessageLimits().max_content_bytes + 1)}]}
    with pytest.raises(sessiondb.InvalidInput):
        run(session.add_items([{"role": "user", "content": "first of the batch"}, too_big]))
    assert texts(run(session.get_items())) == texts([said])


def test_retries_and_the_whole_history_again_store_nothing_twice(open_session):
    session, other = open_session(), open_session()
    run(Runner.run(agent(ScriptedModel(script("a"))), "first question", session=session))
    batch = [{"role": "user", "content": "yes"}, {"type": "function_call_output", "call_id": "call_x", "output": "ok"},
             {"role": "assistant", "content": "no id of its own"}]

    async def storm():
        await session.add_items(batch)
        await session.add_items(batch)
        await asyncio.gather(*(s.add_items(json.loads(json.dumps(batch))) for s in (session, other) * 4))

    run(storm())
    history = run(session.get_items())
    assert len(history) == 4 + 3
    run(session.add_items(history))  # the whole conversation handed back
    run(other.add_items(history + [{"role": "user", "content": "and one more"}]))
    assert texts(run(session.get_items())) == texts(history + [{"role": "user", "content": "and one more"}])


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_the_item_list_from_before_three_compactions_handed_back_stores_only_the_new(open_session, mode):
    """An agent keeps the items it had before any compaction, adds one, and hands all of them
    back after each compaction (S-47): only the added item is stored, though it says what
    earlier ones did."""
    gists = iter(f"gist {n}" for n in range(3))
    session = open_session(summarise=lambda items: [{"role": "assistant", "content": next(gists)}],
                           compaction_mode=mode)
    items = [{"role": "user", "content": "ok"} if i % 3 == 0 else
             {"role": "assistant", "content": f"step {i}"} if i % 3 == 1 else
             {"id": f"msg_{i}", "type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "noted", "annotations": []}]} for i in range(30)]
    run(session.add_items(items))

    def rows():
        return [m for s in session.store.lineage(session.store_session_id)
                for m in session.store.transcript(s.id, include_compacted=True)]

    for round_ in range(3):
        run(session.run_compaction({"force": True}))
        before = len(rows())
        items = json.loads(json.dumps(items)) + [{"role": "user", "content": "ok"}]
        run(session.add_items(items))
        assert len(rows()) == before + 1, f"round {round_}"
        assert texts(run(session.get_items())) == texts([{"role": "assistant", "content": f"gist {round_}"},
                                                         {"role": "user", "content": "ok"}])


def test_a_turn_that_begins_as_the_conversation_began_is_stored_after_a_compaction(open_session):
    """Only a batch that holds the whole stored history is taken as handed back: new items
    that repeat the first ones are new."""
    session = open_session(summarise=lambda items: [{"role": "assistant", "content": "gist"}])
    first = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
             {"role": "user", "content": "bye"}]
    run(session.add_items(first))
    run(session.run_compaction({"force": True}))
    run(session.add_items(first[:2]))
    assert texts(run(session.get_items())) == texts([{"role": "assistant", "content": "gist"}, *first[:2]])


def test_the_same_words_in_two_turns_are_stored_twice(open_session):
    session = open_session()
    for _ in range(2):
        run(Runner.run(agent(ScriptedModel([[answer("ok")]])), "yes", session=session))
    assert [(i.get("role"), i["content"] if isinstance(i["content"], str) else i["content"][0]["text"])
            for i in run(session.get_items())] == [("user", "yes"), ("assistant", "ok")] * 2


def test_a_provider_repeating_item_ids_loses_nothing_and_a_retry_stores_nothing_twice(open_session):
    """The session protocol does not promise unique ids: a model that gives every message the
    id "1" (the SDK's own fake model does) has each different message stored, and its turns
    retried are stored once."""
    session = open_session()
    for word in ("first", "second", "third"):
        run(Runner.run(agent(ScriptedModel([[answer(f"answer {word}", "1")]])), f"question {word}", session=session))
    history = run(session.get_items())
    assert [i["content"] if isinstance(i["content"], str) else i["content"][0]["text"] for i in history] == [
        f"{kind} {word}" for word in ("first", "second", "third") for kind in ("question", "answer")]
    run(session.add_items(history[-2:]))  # the last turn retried
    run(session.add_items(json.loads(json.dumps(history))))  # the whole conversation handed back
    assert texts(run(session.get_items())) == texts(history)


def test_two_processes_with_four_runs_each_lose_and_double_nothing(where, open_session):
    location, options = where
    workers = [subprocess.Popen([sys.executable, str(WORKER), "runs", location, json.dumps(options), "shared",
                                 f"p{p}", "4"]) for p in range(2)]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]
    session = open_session("shared")
    items = run(session.get_items())
    assert len(items) == 8 * 4
    assert session.store.verify().ok
    for tag in (f"p{p}-{i}" for p in range(2) for i in range(4)):
        mine = [i for i in items if tag in json.dumps(i)]
        assert [i.get("type", "message") for i in mine] == [
            "message", "function_call", "function_call_output", "message"], tag
        assert mine[0]["content"] == f"question {tag}" and mine[3]["content"][0]["text"] == f"answer {tag}"


def test_one_batch_retried_at_once_from_two_processes_is_stored_once(where, open_session):
    location, options = where
    session = open_session("racing")
    run(session.add_items([{"role": "user", "content": "start"}]))
    batch = [{"role": "assistant", "content": "same words"}, {"role": "user", "content": "same words"}]
    workers = [subprocess.Popen([sys.executable, str(WORKER), "retry", location, json.dumps(options), "racing",
                                 json.dumps(batch), "3"]) for _ in range(2)]
    assert [w.wait(timeout=240) for w in workers] == [0, 0]
    assert texts(run(session.get_items())) == texts([{"role": "user", "content": "start"}] + batch)


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_compaction_during_a_run_keeps_the_runs_writes_after_the_summary(open_session, mode):
    summary = [{"role": "assistant", "content": "Summary: the user asked about Kyoto."}]
    leased, release = asyncio.Event(), asyncio.Event()
    covered = []

    async def summarise(items):
        covered.extend(items)
        leased.set()
        await release.wait()
        return summary

    async def scenario():
        session = open_session(summarise=summarise, compaction_mode=mode)
        await Runner.run(agent(ScriptedModel(script("before"))), "Kyoto?", session=session)
        before = await session.get_items()
        compaction = asyncio.create_task(session.run_compaction({"force": True}))
        await leased.wait()  # the lease is held: its watermark is the newest message
        await Runner.run(agent(ScriptedModel(script("during"))), "And Osaka?", session=session)
        release.set()
        await compaction
        return session, before

    session, before = run(scenario())
    assert texts(covered) == texts(before)
    after = run(session.get_items())
    assert after[0] == summary[0] and len(after) == 1 + 4
    assert after[1]["content"] == "And Osaka?" and after[-1]["content"][0]["text"] == "answer during"
    lineage = session.store.lineage(session.store_session_id)
    assert len(lineage) == (2 if mode == "rotate" else 1)
    archived = [m for s in lineage for m in session.store.transcript(s.id, include_compacted=True)]
    assert len(archived) == 4 + 1 + 4  # nothing lost: the covered history is archived, still searchable
    assert [h.state for h in run(session.search("Kyoto"))].count("compacted") == 1


class WriteAfterLease:
    """The store, with another writer's message landing right after a compaction lease is taken."""

    def __init__(self, store, item):
        self.store, self.item = store, item

    def __getattr__(self, name):
        return getattr(self.store, name)

    def begin_compaction(self, session_id, **options):
        lease = self.store.begin_compaction(session_id, **options)
        run(SessiondbSession(session_id, store=self.store).add_items([self.item]))
        return lease


def test_a_write_just_after_the_lease_is_not_summarised(where):
    late = {"role": "user", "content": "written after the lease"}
    covered = []
    with sessiondb.open_store(where[0], **where[1]) as store:
        session = SessiondbSession("s", store=WriteAfterLease(store, late),
                                   summarise=lambda items: covered.extend(items) or [{"role": "user", "content": "gist"}])
        run(session.add_items([{"role": "user", "content": "early"}]))
        run(session.run_compaction({"force": True}))
        assert texts(covered) == texts([{"role": "user", "content": "early"}])
        assert texts(run(session.get_items())) == texts([{"role": "user", "content": "gist"}, late])


def test_a_summariser_that_fails_writes_nothing_and_frees_the_lease(open_session):
    def failing(items):
        raise RuntimeError("the summary model is down")

    session = open_session(summarise=failing)
    items = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    run(session.add_items(items))
    with pytest.raises(RuntimeError, match="down"):
        run(session.run_compaction({"force": True}))
    assert texts(run(session.get_items())) == texts(items)
    again = open_session(summarise=lambda items: [{"role": "user", "content": "gist"}])
    run(again.run_compaction({"force": True}))  # the lease was released: no CompactionBusy
    assert texts(run(again.get_items())) == texts([{"role": "user", "content": "gist"}])


def test_an_automatic_compaction_waits_for_its_threshold(open_session):
    calls = []
    session = open_session(summarise=lambda items: calls.append(items) or [{"role": "user", "content": "gist"}],
                           should_compact=lambda items: len(items) >= 8)
    run(Runner.run(agent(ScriptedModel(script("one"))), "one", session=session))
    assert calls == [] and len(run(session.get_items())) == 4
    run(Runner.run(agent(ScriptedModel(script("two"))), "two", session=session))
    assert len(calls) == 1 and texts(run(session.get_items())) == texts([{"role": "user", "content": "gist"}])
    with pytest.raises(sessiondb.InvalidInput, match="summariser"):
        run(open_session().run_compaction({"force": True}))


def test_pop_and_clear_undo_and_keep_history(open_session):
    session = open_session()
    items = [{"role": "user", "content": "a"}, {"id": "msg_b", "type": "message", "role": "assistant",
                                                 "content": [{"type": "output_text", "text": "b"}]}]
    run(session.add_items(items))
    assert run(session.pop_item()) == items[1]
    assert texts(run(session.get_items())) == texts(items[:1])
    run(session.add_items(items[1:]))  # what was undone can be added again
    assert texts(run(session.get_items())) == texts(items)
    run(session.clear_session())
    assert run(session.get_items()) == [] and run(session.pop_item()) is None
    run(session.add_items(items))
    assert texts(run(session.get_items())) == texts(items)
    assert session.store.restore_rewound(session.store_session_id) == 3  # kept all along


def test_pop_undoes_the_item_it_read_and_leaves_one_another_writer_added_meanwhile(store):
    class AppendingBeforeTheRewind:  # another writer's message lands between pop's read and its rewind
        def __getattr__(self, name):
            found = getattr(store, name)
            if name != "rewind":
                return found

            def rewind(session_id, *args, **kwargs):
                store.append(session_id, {"role": "user", "content": "meanwhile", "uid": "other-writer"})
                return found(session_id, *args, **kwargs)
            return rewind

    session = SessiondbSession("raced", store=AppendingBeforeTheRewind())
    items = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    run(session.add_items(items))
    assert run(session.pop_item()) == items[1]
    assert texts(run(session.get_items())) == texts([items[0], {"role": "user", "content": "meanwhile"}])


@pytest.mark.parametrize("undo, popped, left", [
    ("pop_item", {"role": "assistant", "content": "b"}, [{"role": "user", "content": "gist"}]),
    ("clear_session", None, [])])
def test_an_undo_acts_where_a_compaction_moved_the_conversation_meanwhile(store, rotating_before_the_rewind, undo,
                                                                         popped, left):
    run(SessiondbSession("moved", store=store).add_items([{"role": "user", "content": "a"}]))
    lease = store.begin_compaction("moved")
    run(SessiondbSession("moved", store=store).add_items([{"role": "assistant", "content": "b"}]))  # kept
    racing = rotating_before_the_rewind(lease)
    session = SessiondbSession("moved", store=racing)
    racing.armed = True
    assert run(getattr(session, undo)()) == popped
    assert racing.committed and texts(run(session.get_items())) == texts(left)


def test_clear_session_clears_a_compacted_conversation_whose_continuation_has_ended(store):
    session = SessiondbSession("ended", store=store)
    run(session.add_items([{"role": "user", "content": "a"}]))
    tip = store.commit_compaction(store.begin_compaction(session.store_session_id),
                                  {"role": "user", "content": "gist"}, mode="rotate").id
    store.end_session(tip, "user_closed")
    run(session.clear_session())
    assert run(session.get_items()) == []


@pytest.mark.parametrize("epoch, plain_uid", [
    (None, "oa-55ab088e1ba80f1529829bb8d0739ea3f6a2d4bd"), (2, "oa-a7d3e72bf293de3cd439c39ec24a9a56afce0cf7")])
def test_items_of_a_conversation_an_earlier_release_undid_by_count_get_the_uids_it_minted(store, epoch, plain_uid):
    # That release counted undos (metadata 2 after two); this one writes a token at each, and
    # reads either: an item it stored, handed back, must not be stored again.
    store.create_session("openai-agents", session_id="counted", metadata={} if epoch is None else
                         {"openai_agents_epoch": epoch})
    session = SessiondbSession("counted", store=store)
    own = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    run(session.add_items([{"role": "user", "content": "hello"}, own]))
    assert [m.uid for m in store.transcript("counted")] == [
        plain_uid, "oa-message-msg_1-366be3aec8295546" + ("" if epoch is None else f"~{epoch}")]


def test_a_batch_longer_than_one_read_is_stored_once_however_often_it_is_sent(store):
    session = SessiondbSession("long", store=store)
    items = [{"role": "user", "content": f"line {i}"} for i in range(1001)]  # more than one read of the end
    for _ in range(2):
        run(session.add_items(items))
    assert texts(run(session.get_items())) == texts(items)


def test_usage_and_branches(open_session):
    session = open_session()
    result = run(Runner.run(agent(ScriptedModel(script("one"))), "one", session=session))
    run(Runner.run(agent(ScriptedModel([[answer("two done", "msg_two")]])), "two", session=session))
    run(session.store_run_usage(result, model="scripted"))
    usage = run(session.usage())
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 22, 14)
    assert usage.rows[0].model == "scripted"
    run(session.store_run_usage(result))  # named after the agent's model; counted again
    assert {(r.model, r.calls) for r in run(session.usage()).rows} == {("scripted", 2), ("ScriptedModel", 2)}

    branch = run(session.create_branch_from_turn(2, title="Ask two again"))
    assert texts(run(branch.get_items())) == texts(run(session.get_items())[:4])
    run(Runner.run(agent(ScriptedModel([[answer("other two", "msg_other")]])), "two, differently", session=branch))
    assert len(run(branch.get_items())) == 6 and len(run(session.get_items())) == 6
    assert branch.store.get_session(branch.store_session_id).parent_session_id == session.store_session_id
    with pytest.raises(sessiondb.InvalidInput, match="turn_number"):
        run(session.create_branch_from_turn(3))


def test_a_conversation_stored_as_one_user_is_not_there_for_another_under_the_same_sdk_id(open_session):
    alice = open_session("support-42", user_id="alice")
    result = run(Runner.run(agent(ScriptedModel(script("kyoto"))), "Where is my parcel to Kyoto?", session=alice))
    bob = open_session("support-42", user_id="bob")
    assert run(bob.get_items()) == [] and run(bob.search("kyoto", include_tools=True)) == []
    model = ScriptedModel([[answer("Hello Bob.", "msg_bob")]])
    run(Runner.run(agent(model), "Hi, I am Bob.", session=bob))
    assert [item["content"] for item in model.inputs[0]] == ["Hi, I am Bob."]  # sent nothing of Alice's
    run(bob.clear_session())

    mine = run(alice.get_items())
    assert [i.get("role") or i["type"] for i in mine] == ["user", "function_call", "function_call_output", "assistant"]
    assert mine[0]["content"] == "Where is my parcel to Kyoto?"
    assert sorted(h.role for h in run(alice.search("kyoto"))) == ["assistant", "user"]
    store = alice.store
    assert "support-42" not in {s.id for s in store.list_sessions().items}
    assert [(s.id, s.metadata["openai_agents_session_id"]) for s in store.list_sessions(user_id="alice").items] == [
        (alice.store_session_id, "support-42")]
    assert [s.id for s in store.list_sessions(user_id="bob").items] == [bob.store_session_id]
    carol = open_session("support-42", user_id="carol")  # usage first: the session is made for the usage
    run(carol.store_run_usage(result))
    assert store.get_session(carol.store_session_id).user_id == "carol"
    run(alice.add_items([{"role": "user", "content": "And to Osaka?"}]))
    branch = run(alice.create_branch_from_turn(2))
    assert texts(run(branch.get_items())) == texts(mine)
    assert store.get_session(branch.store_session_id).user_id == "alice"


def test_without_a_user_a_conversation_is_stored_under_the_sdk_id_and_read_as_before(open_session):
    said = [{"role": "user", "content": "kept as before"}]
    for sdk_id, stored_id in (("support-42", "support-42"),
                              ("tenant/7", "oa-" + hashlib.sha256(b"tenant/7").hexdigest()[:32])):
        run(open_session(sdk_id).add_items(said))
        again = open_session(sdk_id)
        assert (again.store_session_id, again.user_id) == (stored_id, None)
        assert texts(run(again.get_items())) == texts(said)
        assert again.store.get_session(stored_id).user_id is None
        assert run(open_session(sdk_id, user_id="alice").get_items()) == []  # no user's conversation


class HeldStore:
    """The store, whose reads wait until the event loop has run something else."""

    def __init__(self, store):
        self.store, self.loop_ran = store, threading.Event()

    def __getattr__(self, name):
        return getattr(self.store, name)

    def transcript(self, *args, **options):
        if not self.loop_ran.wait(timeout=10):
            raise AssertionError("the event loop never ran while the store was being read")
        return self.store.transcript(*args, **options)


def test_the_store_is_called_off_the_event_loop(tmp_path):
    with sessiondb.open_store(tmp_path / "s.db") as store:
        held = HeldStore(store)
        session = SessiondbSession("s", store=held)
        held.loop_ran.set()
        run(session.add_items([{"role": "user", "content": "hi"}]))
        held.loop_ran.clear()

        async def meanwhile():
            held.loop_ran.set()

        async def both():
            return await asyncio.gather(session.get_items(), meanwhile())

        assert run(both()) == [[{"role": "user", "content": "hi"}], None]


def test_a_handed_in_store_stays_open_and_an_opened_one_is_closed(tmp_path):
    with sessiondb.open_store(tmp_path / "s.db") as store:
        async def use():
            async with SessiondbSession("s", store=sessiondb.AsyncStore(store)) as session:
                await session.add_items([{"role": "user", "content": "hi"}])
        run(use())
        assert store.transcript("s")[0].text == "hi"
        closed = SessiondbSession("s", store=store)
        closed.close()
        with pytest.raises(sessiondb.StoreClosed):  # a closed session writes nothing, its store open or not
            run(closed.add_items([{"role": "user", "content": "late"}]))
        assert len(store.transcript("s")) == 1
    owned = SessiondbSession("s", tmp_path / "s.db")
    owned.close()
    with pytest.raises(sessiondb.StoreClosed):
        run(owned.add_items([{"role": "user", "content": "late"}]))
    with pytest.raises(sessiondb.StoreClosed):
        owned.store.get_session("s")
