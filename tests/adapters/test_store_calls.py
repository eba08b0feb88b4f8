"""An SDK call that is one operation is one store call (ARCHITECTURE, "What four calls
cross"): it reads or writes in one unit of work, which a rotation or another writer cannot
split, and crosses the store's boundary once. Counted on the public Store's methods."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from langchain_core.messages import AIMessage, HumanMessage

from sessiondb.adapters.langchain import SessiondbChatMessageHistory
from sessiondb.adapters.langgraph import SessiondbSaver
from sessiondb.adapters.openai_agents import SessiondbSession


class Counting:
    """The store, counting the public methods called on it."""

    def __init__(self, store):
        self._store, self.made = store, []

    def __getattr__(self, name):
        found = getattr(self._store, name)
        if name.startswith("_") or not callable(found):
            return found

        def counted(*args, **kwargs):
            self.made.append(name)
            return found(*args, **kwargs)
        return counted

    def calls(self, operation):
        self.made.clear()
        operation()
        return list(self.made)


def rotate(store, session_id):
    store.commit_compaction(store.begin_compaction(session_id), {"role": "system", "content": "gist"}, mode="rotate")


def test_the_agents_session_adds_and_reads_in_one_store_call_each(store):
    counting = Counting(store)
    session = SessiondbSession("one-call", store=counting)
    assert counting.calls(lambda: asyncio.run(session.add_items([{"role": "user", "content": "hi"}]))) == ["extend"]
    rotate(store, session.store_session_id)
    assert counting.calls(lambda: asyncio.run(session.add_items([{"role": "user", "content": "again"}]))) == [
        "extend"]
    for limit in (None, 1):
        read = []
        assert counting.calls(lambda: read.extend(asyncio.run(session.get_items(limit)))) == ["transcript"]
        assert read[-1] == {"role": "user", "content": "again"}
    # A search reads the whole conversation, the session the rotation ended and its continuation, at once.
    found = []
    assert counting.calls(lambda: found.extend(asyncio.run(session.search("hi OR again")))) == ["search"]
    assert sorted(hit.snippet for hit in found) == ["<mark>again</mark>", "<mark>hi</mark>"]
    # A pop reads the item it undoes and returns, marks the undo in the conversation's metadata,
    # rewinds that item; a clear has nothing to read: the rewind of everything lands on the tip.
    assert counting.calls(lambda: asyncio.run(session.pop_item())) == ["transcript", "update_metadata", "rewind"]
    assert counting.calls(lambda: asyncio.run(session.clear_session())) == ["update_metadata", "rewind"]


def test_the_agents_session_records_a_runs_usage_in_one_store_call(store):
    from agents.usage import InputTokensDetails, OutputTokensDetails, Usage

    def response(tokens_in, tokens_out, cached, written, reasoning):
        return SimpleNamespace(usage=Usage(
            requests=1, input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out,
            input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=written),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=reasoning)))
    result = SimpleNamespace(raw_responses=[response(10, 4, 3, 2, 1), response(12, 5, 0, 9, 2), response(7, 1, 7, 0, 0)])
    counting = Counting(store)
    session = SessiondbSession("usage-calls", store=counting)
    # The first write creates the conversation's session; every later one is the record alone.
    assert counting.calls(lambda: asyncio.run(session.store_run_usage(result, model="m"))) == [
        "record_usage", "get_session", "create_session", "record_usage"]
    assert counting.calls(lambda: asyncio.run(session.store_run_usage(result, model="m"))) == ["record_usage"]
    usage = store.usage(session.store_session_id)
    assert (usage.calls, usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            usage.reasoning_tokens) == (6, 58, 20, 20, 22, 6)
    assert counting.calls(lambda: asyncio.run(session.store_run_usage(SimpleNamespace(raw_responses=[]),
                                                                      model="m"))) == []


def test_the_langchain_history_adds_and_reads_in_one_store_call_each(store):
    counting = Counting(store)
    history = SessiondbChatMessageHistory("one-call", store=counting)
    assert counting.calls(lambda: history.add_messages([HumanMessage("hi"), AIMessage("hello")])) == ["extend"]
    rotate(store, "one-call")
    assert counting.calls(lambda: history.add_messages([HumanMessage("again")])) == ["extend"]
    read = []
    assert counting.calls(lambda: read.extend(history.messages)) == ["transcript"]
    assert [m.content for m in read] == ["gist", "again"]
    rotate(store, "one-call")
    assert counting.calls(history.clear) == ["rewind"]  # the live conversation, where the rotation moved it
    assert history.messages == []


def test_the_langgraph_saver_puts_in_one_store_call_each(store):
    from langgraph.checkpoint.base import empty_checkpoint

    counting = Counting(store)
    saver = SessiondbSaver(store=counting)
    first = {**empty_checkpoint(), "id": "1", "channel_values": {"a": 1}, "channel_versions": {"a": 1}}
    config = {}
    assert counting.calls(lambda: config.update(saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}},
                                                          first, {}, {"a": 1}))) == ["extend"]
    assert counting.calls(lambda: saver.put_writes(config, [("a", 2)], "task")) == ["extend"]
    assert counting.calls(lambda: saver.put(config, {**first, "id": "2"}, {}, {})) == ["extend"]
    assert counting.calls(lambda: saver.get_tuple(config)) == ["transcript"]
    # A parent older than the newest records extend hands the write is looked for page by page
    # outside it (two pages here), then the write is made: never the whole thread under the lock.
    saver.put_writes(config, [(f"channel-{i}", i) for i in range(70)], "task")
    assert counting.calls(lambda: saver.put(config, {**first, "id": "3"}, {}, {})) == [
        "extend", "transcript", "transcript", "extend"]


def test_the_adk_service_appends_an_event_in_one_store_call_and_reads_a_session_in_two(store):
    from google.adk.events import Event, EventActions
    from google.genai import types

    from sessiondb.adapters.adk import SessiondbSessionService

    counting = Counting(store)
    service = SessiondbSessionService(store=counting)
    session = asyncio.run(service.create_session(app_name="app", user_id="ada"))
    for text in ("hello", "again"):
        event = Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text=text)]))
        assert counting.calls(lambda: asyncio.run(service.append_event(session, event))) == ["extend"]
    read = []
    calls = counting.calls(lambda: read.append(asyncio.run(service.get_session(app_name="app", user_id="ada",
                                                                               session_id=session.id))))
    assert calls == ["get_sessions", "transcript"]  # the session and its app's and user's state; its events
    assert [e.content.parts[0].text for e in read[0].events] == ["hello", "again"]
    # An event's change to the session's own state is written in the event's unit of work.
    event = Event(author="agent", invocation_id="i1", content=types.Content(role="model", parts=[types.Part(text="ok")]),
                  actions=EventActions(state_delta={"answer": "ok", "temp:scratch": 1}))
    assert counting.calls(lambda: asyncio.run(service.append_event(read[0], event))) == ["extend"]
    again = asyncio.run(service.get_session(app_name="app", user_id="ada", session_id=session.id))
    assert again.state == {"answer": "ok"}
    # So are its changes to the app's and the user's state, each in a session of its own:
    # created on their first write, after an extend that found them missing wrote nothing.
    first = Event(author="agent", invocation_id="i1", content=types.Content(role="model", parts=[types.Part(text="1")]),
                  actions=EventActions(state_delta={"app:theme": "dark", "user:visits": 1}))
    assert counting.calls(lambda: asyncio.run(service.append_event(again, first))) == [
        "extend", "get_sessions", "create_session", "create_session", "extend"]
    second = Event(author="agent", invocation_id="i1", content=types.Content(role="model", parts=[types.Part(text="2")]),
                   actions=EventActions(state_delta={"user:visits": 2}))
    assert counting.calls(lambda: asyncio.run(service.append_event(again, second))) == ["extend"]
    again = asyncio.run(service.get_session(app_name="app", user_id="ada", session_id=session.id))
    assert again.state == {"answer": "ok", "app:theme": "dark", "user:visits": 2}
    # A delete finds the conversation, then deletes it with what a rotation continued it in, at once.
    rotate(store, session.id)
    conversation = [s.id for s in store.lineage(session.id)]
    deleted = counting.calls(lambda: asyncio.run(service.delete_session(app_name="app", user_id="ada",
                                                                        session_id=session.id)))
    assert deleted == ["get_sessions", "delete_session"]
    assert len(conversation) == 2 and not store.get_sessions(conversation)


def test_the_adk_service_lists_sessions_with_one_read_of_every_state_they_merge(store):
    from sessiondb.adapters.adk import SessiondbSessionService

    counting = Counting(store)
    service = SessiondbSessionService(store=counting)
    for user in ("ada", "bob", "cy"):
        for _ in range(2):
            asyncio.run(service.create_session(app_name="app", user_id=user, state={"user:seen": user, "app:v": 1}))
    listed = []
    calls = counting.calls(lambda: listed.append(asyncio.run(service.list_sessions(app_name="app"))))
    # The page of sessions, the app's and every listed user's state at once, then each session's newest event.
    assert calls == ["list_sessions", "get_sessions"] + ["transcript"] * 6
    assert sorted(s.state["user:seen"] for s in listed[0].sessions) == ["ada", "ada", "bob", "bob", "cy", "cy"]
    assert {s.state["app:v"] for s in listed[0].sessions} == {1}
    mine = asyncio.run(service.list_sessions(app_name="app", user_id="bob")).sessions
    assert [s.user_id for s in mine] == ["bob", "bob"] and {s.state["user:seen"] for s in mine} == {"bob"}


def test_the_adk_memory_searches_in_three_store_calls_however_many_sessions_it_finds(store):
    from google.adk.events import Event
    from google.genai import types

    from sessiondb.adapters.adk import SessiondbMemoryService, SessiondbSessionService

    def said(text):
        return Event(author="user", invocation_id="i1", content=types.Content(role="user", parts=[types.Part(text=text)]))

    sessions = SessiondbSessionService(store=store)
    for app in ("app", "other"):  # another app's words are the user's too, and never this app's memories
        for n in range(3):
            session = asyncio.run(sessions.create_session(app_name=app, user_id="ada"))
            asyncio.run(sessions.append_event(session, said(f"lantern {n} early in {app}")))
            rotate(store, session.id)  # what follows lands in the continuation, still this app's
            session = asyncio.run(sessions.get_session(app_name=app, user_id="ada", session_id=session.id))
            asyncio.run(sessions.append_event(session, said(f"lantern {n} later in {app}")))
    counting = Counting(store)
    memory = SessiondbMemoryService(store=counting, limit=20)
    found = []
    assert counting.calls(lambda: found.extend(asyncio.run(memory.search_memory(
        app_name="app", user_id="ada", query="lantern")).memories)) == ["recall", "get_sessions", "get_messages"]
    assert sorted(m.content.parts[0].text for m in found) == [
        f"lantern {n} {when} in app" for n in range(3) for when in ("early", "later")]
