"""LangChain's chat history on sessiondb, driven by LangChain itself, on both backends."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage, AIMessageChunk, ChatMessage, FunctionMessage, HumanMessage, SystemMessage, ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableFieldSpec
from langchain_core.runnables.history import RunnableWithMessageHistory

import sessiondb
from sessiondb.adapters.langchain import SessiondbChatMessageHistory

WORKER = Path(__file__).with_name("langchain_worker.py")

EVERY_KIND = {
    "system": SystemMessage("Answer in one line."),
    "human": HumanMessage("What is the weather in Kyoto?"),
    "human with id and name": HumanMessage("Me again", id="human-1", name="ada"),
    "human with blocks": HumanMessage([{"type": "text", "text": "And this picture?"},
                                       {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
    "ai with tool calls": AIMessage(
        "", id="ai-1",
        tool_calls=[{"name": "weather", "args": {"city": "Kyoto", "days": 2}, "id": "call-1"}],
        invalid_tool_calls=[{"name": "forecast", "args": "{not json", "id": "call-2", "error": "bad JSON"}],
        usage_metadata={"input_tokens": 12, "output_tokens": 7, "total_tokens": 19},
        response_metadata={"model_name": "scripted", "finish_reason": "tool_calls"},
        additional_kwargs={"refusal": None}, name="planner"),
    "tool": ToolMessage("22°C and sunny", tool_call_id="call-1", name="weather", artifact={"raw": [22, "C"]},
                        status="error", id="tool-1"),
    "ai": AIMessage("Sunny, 22°C.", id="ai-2"),
    "ai with blocks": AIMessage([{"type": "text", "text": "Here:"}, {"type": "reasoning", "reasoning": "short"}]),
    "chat with another role": ChatMessage("Looks right.", role="critic"),
    "function": FunctionMessage("42", name="answer"),
    "ai chunk": AIMessageChunk("partial", id="chunk-1"),
    "human cut inside an emoji": HumanMessage("half an emoji: \ud83d", id="human-2"),
    "ai with half a character in a tool call": AIMessage(
        "\udc00", tool_calls=[{"name": "weather", "args": {"city": "Kyoto \ud83d"}, "id": "call-3"}]),
    "human whose last block looks like the extras": HumanMessage([{"type": "langchain", "text_content": True,
                                                                   "fields": {"name": "not mine"}}]),
}


def same(sent, read):
    """Equal, as the SDK's own in-memory history gives messages back (no id where none was given)."""
    return sent == read


@pytest.mark.parametrize("kind", EVERY_KIND)
def test_every_message_kind_reads_back_equal(store, kind):
    history = SessiondbChatMessageHistory("trip", store=store)
    history.add_messages([EVERY_KIND[kind]])
    [read] = history.messages
    assert same(EVERY_KIND[kind], read), (EVERY_KIND[kind], read)


def test_a_conversation_reads_naturally_in_sessiondb(store):
    history = SessiondbChatMessageHistory("trip", store=store)
    history.add_messages(list(EVERY_KIND.values())[:7])
    rows = store.transcript("trip")
    assert [r.role for r in rows] == ["system", "user", "user", "user", "assistant", "tool", "assistant"]
    assert rows[1].content == "What is the weather in Kyoto?"  # no extras: plain text
    assert rows[4].tool_calls == [{"id": "call-1", "type": "function",
                                   "function": {"name": "weather", "arguments": '{"city": "Kyoto", "days": 2}'}}]
    assert (rows[5].tool_call_id, rows[5].tool_name, rows[5].text) == ("call-1", "weather", "22°C and sunny")
    assert [r.uid for r in rows[4:7]] == ["ai-1", "tool-1", "ai-2"]
    assert store.get_session("trip").source == "langchain"
    resumed = store.resume("trip")
    assert resumed[5]["name"] == "weather" and resumed[6]["content"] == "Sunny, 22°C."
    assert [(h.role, h.uid) for h in store.search("Kyoto")] == [("user", rows[1].uid)]
    assert not store.search("scripted", include_tools=True)  # what has no column is kept out of search


def test_adding_the_history_again_stores_nothing_twice(store):
    history = SessiondbChatMessageHistory("trip", store=store)
    history.add_messages(list(EVERY_KIND.values()))
    history.add_messages(history.messages)  # read back: ids included, none where none was given
    history.add_messages([EVERY_KIND["ai"], EVERY_KIND["tool"]])  # by their own ids
    assert len(store.transcript("trip")) == len(EVERY_KIND)
    assert history.messages == list(EVERY_KIND.values())


def test_a_history_longer_than_one_read_is_added_and_handed_back_whole(store):
    history = SessiondbChatMessageHistory("long", store=store)
    said = [HumanMessage(f"line {i}") for i in range(1200)]  # more than the 1,000 one read of the end takes
    history.add_messages(said)
    history.add_messages(history.messages + [AIMessage("and one more")])  # read back: only the new one stored
    assert [m.content for m in history.messages] == [m.content for m in said] + ["and one more"]


def test_clear_clears_what_a_compaction_kept_meanwhile(store, rotating_before_the_rewind):
    SessiondbChatMessageHistory("kept", store=store).add_messages([HumanMessage("a")])
    lease = store.begin_compaction("kept")
    SessiondbChatMessageHistory("kept", store=store).add_messages([AIMessage("b")])  # kept by the rotation
    racing = rotating_before_the_rewind(lease)
    history = SessiondbChatMessageHistory("kept", store=racing)
    racing.armed = True
    history.clear()
    assert racing.committed and history.messages == []


def test_clear_clears_a_compacted_conversation_whose_continuation_has_ended(store):
    history = SessiondbChatMessageHistory("ended", store=store)
    history.add_messages([HumanMessage("a")])
    tip = store.commit_compaction(store.begin_compaction("ended"), {"role": "user", "content": "gist"},
                                  mode="rotate").id
    store.end_session(tip, "user_closed")
    assert [m.content for m in history.messages] == ["gist"]
    history.clear()
    assert history.messages == []


def test_clear_rewinds_and_the_messages_can_be_restored(store):
    history = SessiondbChatMessageHistory("trip", store=store)
    history.add_messages([EVERY_KIND["human"], EVERY_KIND["ai"]])
    history.clear()
    assert history.messages == []
    history.add_messages([HumanMessage("A new start")])
    assert [m.content for m in history.messages] == ["A new start"]
    assert store.restore_rewound("trip") == 2
    assert len(history.messages) == 3


def test_a_session_written_by_another_writer_reads_as_a_history(store):
    store.create_session("gateway", session_id="native")
    store.append("native", [
        {"role": "user", "content": "Find my notes"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "notes", "arguments": '{"q": "kyoto"}'}}]},
        {"role": "tool", "content": "two notes", "tool_name": "notes"},
    ])
    user, ai, tool = SessiondbChatMessageHistory("native", store=store).messages
    assert (type(user), user.content) == (HumanMessage, "Find my notes")
    assert ai.tool_calls == [{"name": "notes", "args": {"q": "kyoto"}, "id": "c1", "type": "tool_call"}]
    assert (type(tool), tool.content, tool.name, tool.tool_call_id) == (ToolMessage, "two notes", "notes", "")


def test_a_history_opens_and_closes_its_own_store(tmp_path):
    with SessiondbChatMessageHistory("trip", home=tmp_path / "home", profile="work") as history:
        history.add_messages([HumanMessage("hi")])
    with sessiondb.open_store(home=tmp_path / "home", profile="work") as store:
        assert [m.text for m in store.transcript("trip")] == ["hi"]
    with pytest.raises(sessiondb.StoreClosed):
        history.messages


def test_what_is_not_a_message_is_refused_and_nothing_is_written(store):
    history = SessiondbChatMessageHistory("trip", store=store)
    with pytest.raises(sessiondb.InvalidInput, match="LangChain messages"):
        history.add_messages([HumanMessage("fine"), {"role": "user", "content": "a dict"}])
    with pytest.raises(sessiondb.InvalidInput, match="not JSON"):
        history.add_messages([AIMessage("", tool_calls=[{"name": "t", "args": {"when": object()}, "id": "c"}])])
    assert history.messages == []


def test_the_async_twins_run_off_the_event_loop(store):
    history = SessiondbChatMessageHistory("trip", store=store)
    threads = []
    for name in ("extend", "transcript", "rewind"):
        real = getattr(store, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            threads.append((_name, threading.get_ident()))
            return _real(*args, **kwargs)

        setattr(store, name, spy)

    async def run():
        await history.aadd_messages([EVERY_KIND["human"], EVERY_KIND["ai"]])
        read = await history.aget_messages()
        await history.aclear()
        return read, threading.get_ident()

    read, loop_thread = asyncio.run(run())
    assert [m.content for m in read] == [EVERY_KIND["human"].content, "Sunny, 22°C."]
    assert {name for name, _ in threads} == {"extend", "transcript", "rewind"}
    assert loop_thread not in {ident for _, ident in threads}


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_compaction_while_messages_are_added_loses_nothing(store, mode):
    history = SessiondbChatMessageHistory("trip", store=store)
    history.add_messages([HumanMessage(f"early {i}", id=f"early-{i}") for i in range(6)])
    lease = store.begin_compaction("trip", holder="test")
    writers = [threading.Thread(target=history.add_messages,
                                args=([HumanMessage(f"late {w}.{i}", id=f"late-{w}-{i}") for i in range(5)],))
               for w in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    tip = store.commit_compaction(lease, [{"uid": "summary-1", "role": "system", "content": "Six early messages."}],
                                  mode=mode)
    history.add_messages([HumanMessage("after", id="after")])  # a rotated session passes it to its tip
    live = history.messages
    assert live[0].content == "Six early messages."
    assert sorted(m.id for m in live[1:]) == sorted([f"late-{w}-{i}" for w in range(4) for i in range(5)] + ["after"])
    every = [m.uid for s in store.lineage(tip.id) for m in store.transcript(s.id, include_compacted=True)]
    assert sorted(every) == sorted({*every}) and {f"early-{i}" for i in range(6)} <= {*every}
    history.add_messages(live)  # the compacted history handed back stores nothing
    assert len(history.messages) == len(live)


def test_a_runnable_keeps_its_conversation_in_sessiondb(store):
    model = GenericFakeChatModel(messages=iter([AIMessage("Kyoto is sunny."), AIMessage("Take a hat.")]))
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")])
    chain = RunnableWithMessageHistory(prompt | model, lambda sid: SessiondbChatMessageHistory(sid, store=store),
                                       input_messages_key="question", history_messages_key="history")
    config = {"configurable": {"session_id": "trip"}}
    chain.invoke({"question": "Weather in Kyoto?"}, config)
    chain.invoke({"question": "What should I bring?"}, config)
    assert [(m.role, m.text) for m in store.transcript("trip")] == [
        ("user", "Weather in Kyoto?"), ("assistant", "Kyoto is sunny."),
        ("user", "What should I bring?"), ("assistant", "Take a hat.")]


def test_a_history_stored_as_one_user_is_empty_for_another_under_the_same_session_id(store):
    model = GenericFakeChatModel(messages=iter([AIMessage("Kyoto is sunny."), AIMessage("Hello Bob.")]))
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")])
    chain = RunnableWithMessageHistory(
        prompt | model, lambda user_id, conversation_id: SessiondbChatMessageHistory(
            conversation_id, store=store, user_id=user_id),
        input_messages_key="question", history_messages_key="history",
        history_factory_config=[ConfigurableFieldSpec(id="user_id", annotation=str),
                                ConfigurableFieldSpec(id="conversation_id", annotation=str)])
    chain.invoke({"question": "Weather in Kyoto?"}, {"configurable": {"user_id": "alice", "conversation_id": "trip"}})
    bob = SessiondbChatMessageHistory("trip", store=store, user_id="bob")
    assert bob.messages == []
    chain.invoke({"question": "I am Bob."}, {"configurable": {"user_id": "bob", "conversation_id": "trip"}})
    assert [m.content for m in bob.messages] == ["I am Bob.", "Hello Bob."]
    bob.clear()

    alice = SessiondbChatMessageHistory("trip", store=store, user_id="alice")
    assert [m.content for m in alice.messages] == ["Weather in Kyoto?", "Kyoto is sunny."]
    assert alice.store_session_id != bob.store_session_id and "trip" not in {s.id for s in store.list_sessions().items}
    assert [(s.id, s.metadata["langchain_session_id"]) for s in store.list_sessions(user_id="alice").items] == [
        (alice.store_session_id, "trip")]


def test_without_a_user_a_history_is_stored_under_its_session_id_and_read_as_before(store):
    SessiondbChatMessageHistory("trip", store=store).add_messages([HumanMessage("kept as before")])
    again = SessiondbChatMessageHistory("trip", store=store)
    assert (again.store_session_id, again.user_id) == ("trip", None)
    assert [m.content for m in again.messages] == ["kept as before"]
    assert store.get_session("trip").user_id is None and store.get_session("trip").metadata == {}
    assert SessiondbChatMessageHistory("trip", store=store, user_id="alice").messages == []  # no user's history


def test_messages_without_ids_read_back_as_the_sdks_own_history_gives_them(store):
    """No id is minted where none was given (the SDK's in-memory history gives none); the
    same words said twice are two messages, and the history handed back stores nothing twice."""
    from langchain_core.chat_history import InMemoryChatMessageHistory

    turns = [HumanMessage("yes"), AIMessage("ok"), HumanMessage("no"), AIMessage("ok"),
             HumanMessage("yes"), AIMessage("ok")]
    ours, theirs = SessiondbChatMessageHistory("plain", store=store), InMemoryChatMessageHistory()
    for history in (ours, theirs):
        for turn in range(0, len(turns), 2):
            history.add_messages(turns[turn:turn + 2])
    ours.add_messages(ours.messages)  # the history handed back whole
    assert ours.messages == theirs.messages == turns


def test_two_processes_adding_to_one_session_lose_double_and_reorder_nothing(store_place):
    (location, options), turns = store_place, 40
    checkout = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}  # this checkout's sessiondb
    workers = [subprocess.Popen([sys.executable, str(WORKER), location, json.dumps(options), "shared", name,
                                 str(turns)], env=checkout,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in ("north", "south")]
    assert [w.stdout.readline() for w in workers] == ["ready\n", "ready\n"]  # both open: now write together
    for worker in workers:
        worker.stdin.write("go\n")
        worker.stdin.flush()
    for worker in workers:
        _, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
    with SessiondbChatMessageHistory("shared", location, **options) as history:
        said = [m.content for m in history.messages]
        assert history.store.verify().ok
    assert sorted(said) == sorted({*said}) and len(said) == 2 * 2 * turns
    for name in ("north", "south"):
        assert [s for s in said if s.startswith(name)] == [
            f"{name} {verb} {i}" for i in range(turns) for verb in ("asks", "hears")]
