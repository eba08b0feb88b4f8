"""The Google ADK adapter, driven by the SDK's own Runner with a scripted model, on both backends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types

import sessiondb
from sessiondb.adapters import adk
from sessiondb.adapters.adk import SessiondbMemoryService, SessiondbSessionService
from sessiondb.adapters.adk_events import message_of

sys.path.insert(0, str(Path(__file__).parent))
from adk_agent import APP, ScriptedModel, ask, runner  # noqa: E402  (tests/adapters/adk_agent.py)

WORKER = Path(__file__).with_name("adk_worker.py")
APPENDER = Path(__file__).with_name("adk_appender.py")
#: This checkout first on a child's path: the venv's editable install may point at another one.
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).resolve().parents[2]),
                                                                      os.environ.get("PYTHONPATH")]))}


@pytest.fixture(autouse=True)
def no_telemetry(monkeypatch):
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")  # the worker processes inherit it


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request, tmp_path):
    """(location, open_store options) of this test's own empty store on each backend."""
    if request.param == "postgresql":
        return request.getfixturevalue("pg_server").url(), {"schema": request.getfixturevalue("pg_schema")}
    return str(tmp_path / "agents.db"), {}


def service(where, **options) -> SessiondbSessionService:
    location, open_options = where
    return SessiondbSessionService(location, **open_options, **options)


def store_of(where) -> sessiondb.Store:
    location, open_options = where
    return sessiondb.open_store(location, **open_options)


def state_homes(user_id: str) -> list[str]:
    """The ids of the app's and the user's state sessions."""
    return list(adk.state.homes(APP, user_id))


def said(part: types.Part) -> str:
    if part.function_call:
        return f"call {part.function_call.name} {part.function_call.args}"
    if part.function_response:
        return f"response {part.function_response.name} {part.function_response.response}"
    return part.text


def event(number: int, text: str = "", **fields) -> Event:
    return Event(id=f"event-{number}", invocation_id="inv", author="user" if number % 2 else "forecaster",
                 content=types.Content(role="user" if number % 2 else "model", parts=[types.Part(text=text or f"line {number}")]),
                 timestamp=1_000.0 + number, **fields)


def test_a_second_run_sends_the_model_the_first_runs_history(where):
    model = ScriptedModel(model="scripted")

    async def scenario():
        async with service(where) as sessions:
            session = await sessions.create_session(app_name=APP, user_id="ana")
            await ask(runner(sessions), "ana", session.id, "Weather in Kyoto?")
        async with service(where) as sessions:  # a fresh service: everything comes from the store
            await ask(runner(sessions, model=model), "ana", session.id, "And in Osaka?")
        return session.id

    session_id = asyncio.run(scenario())
    assert [(c.role, [said(p) for p in c.parts]) for c in model.requests[0]] == [
        ("user", ["Weather in Kyoto?"]),
        ("model", ["call weather {'city': 'Kyoto'}"]),
        ("user", ["response weather {'forecast': 'sunny in Kyoto'}"]),
        ("model", ["The forecast: sunny in Kyoto."]),
        ("user", ["And in Osaka?"]),
    ]
    with store_of(where) as store:  # and a person reads the same conversation in sessiondb
        stored = store.get_session(session_id)
        assert (stored.source, stored.user_id, stored.metadata["app_name"]) == ("adk", "ana", APP)
        rows = store.transcript(session_id)
    assert [(m.role, m.text) for m in rows[:4]] == [
        ("user", "Weather in Kyoto?"),
        ("assistant", ""),
        ("tool", '{"forecast": "sunny in Kyoto"}'),
        ("assistant", "The forecast: sunny in Kyoto."),
    ]
    call = rows[1].tool_calls[0]
    assert (call["function"]["name"], json.loads(call["function"]["arguments"])) == ("weather", {"city": "Kyoto"})
    assert (rows[2].tool_call_id, rows[2].tool_name) == (call["id"], "weather")


def test_state_keeps_each_scope_across_sessions(where):
    async def scenario():
        async with service(where) as sessions:
            run = runner(sessions)
            first = await sessions.create_session(
                app_name=APP, user_id="ana", session_id="trip-1",
                state={"mood": "curious", "app:version": 1, "user:lang": "fr", "temp:draft": "x"})
            await ask(run, "ana", first.id, "Weather in Kyoto?")
            second = await sessions.create_session(app_name=APP, user_id="ana")
            await ask(run, "ana", second.id, "Weather in Osaka?")
            other = await sessions.create_session(app_name=APP, user_id="ben")
            reread = [await sessions.get_session(app_name=APP, user_id=u, session_id=s.id)
                      for u, s in (("ana", first), ("ana", second), ("ben", other))]
            return reread, await sessions.get_user_state(app_name=APP, user_id="ana")

    (first, second, other), user_state = asyncio.run(scenario())
    app = {"app:version": 1, "app:cities": ["Kyoto", "Osaka"]}
    ana = {"user:lang": "fr", "user:asked_kyoto": True, "user:asked_osaka": True}
    assert first.state == {"mood": "curious", "last_city": "Kyoto", **app, **ana}
    assert second.state == {"last_city": "Osaka", **app, **ana}
    assert other.state == app
    assert user_state == {"lang": "fr", "asked_kyoto": True, "asked_osaka": True}
    with store_of(where) as store:  # temp: keys never reach the store, in metadata or in events
        stored = json.dumps(list(store.export()))
    assert "temp:" not in stored and "raw reading" not in stored


def test_get_session_filters_as_the_sdk_does(where):
    events = [event(n) for n in range(1, 7)]
    configs = [None, GetSessionConfig(num_recent_events=2), GetSessionConfig(after_timestamp=1_004.0),
               GetSessionConfig(num_recent_events=2, after_timestamp=1_002.0), GetSessionConfig(num_recent_events=0),
               GetSessionConfig(num_recent_events=10), GetSessionConfig(after_timestamp=2_000.0)]

    async def read_all(sessions):
        session = await sessions.create_session(app_name=APP, user_id="ana", session_id="filtered")
        for e in events:
            await sessions.append_event(session, e.model_copy(deep=True))
        return [[e.id for e in (await sessions.get_session(app_name=APP, user_id="ana", session_id="filtered",
                                                            config=c)).events] for c in configs]

    async def scenario():
        async with service(where) as sessions:
            return await read_all(sessions), await read_all(InMemorySessionService())

    ours, sdks = asyncio.run(scenario())
    assert ours == sdks
    assert ours[1] == ["event-5", "event-6"] and ours[3] == ["event-5", "event-6"] and ours[4] == []


def test_a_user_id_no_session_can_be_stored_under_lists_none_as_the_sdks_service_does(where):
    async def listed(sessions):
        await sessions.create_session(app_name=APP, user_id="ana", session_id="a1")
        return [(await sessions.list_sessions(app_name=APP, user_id=u)).sessions for u in ("x" * 201, "a\x00b")]

    async def scenario():
        async with service(where) as sessions:
            return await listed(sessions), await listed(InMemorySessionService())

    ours, sdks = asyncio.run(scenario())
    assert ours == sdks == [[], []]


def test_sessions_are_listed_per_app_and_user_and_deleted(where):
    async def scenario():
        async with service(where) as sessions:
            await sessions.create_session(app_name=APP, user_id="ana", session_id="a1", state={"app:theme": "dark"})
            await sessions.create_session(app_name=APP, user_id="ben", session_id="b1")
            await sessions.create_session(app_name="other-app", user_id="ana", session_id="c1")
            a1 = await sessions.get_session(app_name=APP, user_id="ana", session_id="a1")
            await sessions.append_event(a1, Event(invocation_id="inv", author="user",
                                                  content=types.Content(role="user", parts=[types.Part(text="hi")])))
            with pytest.raises(AlreadyExistsError):  # an id is unique per app and user...
                await sessions.create_session(app_name=APP, user_id="ana", session_id="a1")
            await sessions.create_session(app_name=APP, user_id="ben", session_id="a1")  # ...not per store
            with pytest.raises(sessiondb.InvalidInput, match="not a valid session id"):
                await sessions.create_session(app_name=APP, user_id="ana", session_id="a/b")
            listed = {u: [(s.user_id, s.id, s.state, s.events) for s in
                          (await sessions.list_sessions(app_name=APP, user_id=u)).sessions] for u in ("ana", None)}
            bens = await sessions.get_session(app_name=APP, user_id="ben", session_id="a1")
            strangers = [await sessions.get_session(app_name="other-app", user_id="ana", session_id="a1")]
            await sessions.delete_session(app_name=APP, user_id="ben", session_id="a1")  # ben's own
            kept = await sessions.get_session(app_name=APP, user_id="ana", session_id="a1")
            await sessions.delete_session(app_name=APP, user_id="ana", session_id="a1")
            gone = await sessions.get_session(app_name=APP, user_id="ana", session_id="a1")
            return listed, bens, strangers, kept, gone

    listed, bens, strangers, kept, gone = asyncio.run(scenario())
    theme = {"app:theme": "dark"}
    assert listed["ana"] == [("ana", "a1", theme, [])]
    # oldest update first
    assert listed[None] == [("ben", "b1", theme, []), ("ana", "a1", theme, []), ("ben", "a1", theme, [])]
    assert (bens.user_id, bens.events) == ("ben", []) and strangers == [None]
    assert [e.content.parts[0].text for e in kept.events] == ["hi"] and gone is None
    with store_of(where) as store, pytest.raises(sessiondb.NotFound):
        store.get_session("a1")


def test_a_store_written_before_ids_were_per_user_reads_as_it_did(where):
    # Then every conversation was stored under its ADK id, with no other mark: such a store
    # needs no migration, and a namesake created now is stored beside it.
    with store_of(where) as store:
        store.create_session("adk", session_id="s1", user_id="ana", metadata={"app_name": APP})
        store.append("s1", message_of(event(1, "Book the ferry")))

    async def scenario():
        async with service(where) as sessions:
            old = await sessions.get_session(app_name=APP, user_id="ana", session_id="s1")
            await sessions.create_session(app_name=APP, user_id="ben", session_id="s1")
            await sessions.append_event(old, event(2))
            listed = (await sessions.list_sessions(app_name=APP, user_id=None)).sessions
            return (old, [(s.user_id, s.id) for s in listed],
                    await sessions.get_session(app_name=APP, user_id="ben", session_id="s1"))

    old, listed, bens = asyncio.run(scenario())
    assert [e.id for e in old.events] == ["event-1", "event-2"]
    assert listed == [("ana", "s1"), ("ben", "s1")]  # by last update: its events are stamped in 1970
    assert (bens.user_id, bens.events) == ("ben", [])
    with store_of(where) as store:
        assert [m.uid for m in store.transcript("s1")] == ["event-1", "event-2"]  # still under its own id


def test_an_event_reads_back_equal(where):
    call = Event(
        invocation_id="inv-1", author="forecaster", branch="forecaster", timestamp=1_234.5,
        content=types.Content(role="model", parts=[
            types.Part(text="The user wants Kyoto.", thought=True),
            types.Part(text="Let me look."),
            types.Part(function_call=types.FunctionCall(id="call-1", name="weather", args={"city": "Kyōto"})),
            types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG\x00\xff")),
        ]),
        actions=EventActions(state_delta={"note": None, "visits": 2}, artifact_delta={"map.png": 1}),
        custom_metadata={"trace": [1, 2]},
        usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=3, candidates_token_count=5),
    )
    answer = Event(invocation_id="inv-1", author="forecaster", timestamp=1_235.0,
                   content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                       id="call-1", name="weather", response={"forecast": "sunny"}))]))
    quiet = Event(invocation_id="inv-1", author="forecaster", timestamp=1_236.0,
                  actions=EventActions(state_delta={"done": True}))

    async def scenario():
        async with service(where) as sessions:
            session = await sessions.create_session(app_name=APP, user_id="ana")
            for e in (call, answer, quiet):
                await sessions.append_event(session, e.model_copy(deep=True))
            return session.id, await sessions.get_session(app_name=APP, user_id="ana", session_id=session.id)

    session_id, reread = asyncio.run(scenario())
    assert reread.events == [call, answer, quiet]
    assert reread.state == {"note": None, "visits": 2, "done": True}
    with store_of(where) as store:
        rows = store.transcript(session_id)
    assert [(m.role, m.text, m.reasoning) for m in rows] == [
        ("assistant", "Let me look.", "The user wants Kyoto."),
        ("tool", '{"forecast": "sunny"}', None),
        ("system", "", None),
    ]


def test_an_event_holding_half_a_character_reads_back_equal_and_is_found(where):
    cut = Event(invocation_id="inv-1", author="user", timestamp=1_234.5,
                content=types.Content(role="user", parts=[types.Part(text="a string cut inside an emoji: \ud83d")]))
    answer = Event(invocation_id="inv-1", author="forecaster", timestamp=1_235.0,
                   content=types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
                       id="call-1", name="weather", response={"forecast": "\udc00 sunny"}))]))

    async def scenario():
        async with service(where) as sessions, SessiondbMemoryService(where[0], **where[1]) as memory:
            session = await sessions.create_session(app_name=APP, user_id="ana")
            for e in (cut, answer):
                await sessions.append_event(session, e.model_copy(deep=True))
            found = await memory.search_memory(app_name=APP, user_id="ana", query="emoji")
            return await sessions.get_session(app_name=APP, user_id="ana", session_id=session.id), found

    reread, found = asyncio.run(scenario())
    assert reread.events == [cut, answer]
    assert [m.content.parts[0].text for m in found.memories] == ["a string cut inside an emoji: \ud83d"]


def test_a_retry_storm_stores_each_event_once(where):
    retried = event(1, "Book the ryokan", actions=EventActions(state_delta={"user:bookings": 1}))

    async def scenario():
        async with service(where) as sessions, service(where) as elsewhere:
            session = await sessions.create_session(app_name=APP, user_id="ana", session_id="stormy")
            copies = [session.model_copy(deep=True) for _ in range(12)]
            await asyncio.gather(*(s.append_event(c, retried.model_copy(deep=True))
                                   for s, c in zip([sessions, elsewhere] * 6, copies)))
            for _ in range(3):
                await sessions.append_event(copies[0], retried.model_copy(deep=True))
            with pytest.raises(AlreadyExistsError):  # one id, other content: refused, never a second copy
                await sessions.append_event(copies[1], event(1, "Cancel the ryokan"))
            return await sessions.get_session(app_name=APP, user_id="ana", session_id="stormy")

    reread = asyncio.run(scenario())
    assert reread.events == [retried]
    assert reread.state == {"user:bookings": 1}
    with store_of(where) as store:
        assert [m.uid for m in store.transcript("stormy")] == ["event-1"]


def test_an_event_whose_user_state_cannot_be_stored_is_not_stored_and_changes_no_state(where):
    """An event and its whole state delta (the session's, the app's, the user's) are one unit
    of work: refused together, as the SDK's database service refuses one transaction. Here
    the user's state session is full: its patch is refused, so is the event, and so is the
    session's own key it carried."""
    big = "x" * 60_000

    async def scenario():
        async with service(where) as sessions:
            session = await sessions.create_session(app_name=APP, user_id="ana", session_id="full")
            for n in range(1, 5):
                await sessions.append_event(session, event(n, actions=EventActions(state_delta={f"user:note{n}": big})))
            with pytest.raises(sessiondb.InvalidInput, match="metadata"):
                await sessions.append_event(session, event(5, actions=EventActions(
                    state_delta={"user:note5": big, "app:seen": 5, "turn": 5})))
            return await sessions.get_session(app_name=APP, user_id="ana", session_id="full")

    reread = asyncio.run(scenario())
    assert [e.id for e in reread.events] == [f"event-{n}" for n in range(1, 5)]
    assert sorted(reread.state) == [f"user:note{n}" for n in range(1, 5)]  # neither turn nor app:seen


def test_an_event_for_a_conversation_not_stored_creates_no_state_sessions(where):
    """A refused append writes nothing anywhere: not the app's and the user's state sessions
    either, which for a user whose data was erased would bring the user back."""
    async def scenario():
        async with service(where) as sessions:
            session = await sessions.create_session(app_name=APP, user_id="ana", session_id="gone")
            await sessions.delete_session(app_name=APP, user_id="ana", session_id="gone")
            with pytest.raises(SessionNotFoundError):
                await sessions.append_event(session, event(1, actions=EventActions(
                    state_delta={"user:seen": 1, "app:seen": 1})))

    asyncio.run(scenario())
    with store_of(where) as store:
        assert store.get_sessions(state_homes("ana")) == {}
        assert store.list_sessions(include_hidden=True).items == []


def test_a_state_session_deleted_while_its_first_write_runs_is_made_again(where, monkeypatch):
    made = []

    def create_then_lose(store, homes, app_name, user_id):
        created(store, homes, app_name, user_id)
        if not made:  # the first time only: deleted before the write that wanted it runs again
            for home in homes:
                store.delete_session(home)
        made.append(list(homes))
    created = adk.state.create
    monkeypatch.setattr(adk.state, "create", create_then_lose)

    async def scenario():
        async with service(where) as sessions:
            session = await sessions.create_session(app_name=APP, user_id="ana", session_id="raced")
            await sessions.append_event(session, event(1, actions=EventActions(state_delta={"user:seen": 1})))
            return await sessions.get_session(app_name=APP, user_id="ana", session_id="raced")

    reread = asyncio.run(scenario())
    assert len(made) == 2  # made, lost, made again
    assert [e.id for e in reread.events] == ["event-1"] and reread.state == {"user:seen": 1}


def test_a_session_changed_elsewhere_is_stale(where):
    async def scenario():
        async with service(where) as here, service(where) as there:
            await here.create_session(app_name=APP, user_id="ana", session_id="shared")
            mine = await here.get_session(app_name=APP, user_id="ana", session_id="shared")
            theirs = await there.get_session(app_name=APP, user_id="ana", session_id="shared")
            await there.append_event(theirs, event(1))
            with pytest.raises(StaleSessionError):
                await here.append_event(mine, event(2, actions=EventActions(state_delta={"lost": True})))
            mine = await here.get_session(app_name=APP, user_id="ana", session_id="shared")  # reloaded
            await here.append_event(mine, event(2))
            async with service(where, check_stale=False) as lenient:
                await lenient.append_event(theirs, event(3))  # stale, and accepted by choice
            return await here.get_session(app_name=APP, user_id="ana", session_id="shared")

    reread = asyncio.run(scenario())
    assert [e.id for e in reread.events] == ["event-1", "event-2", "event-3"]
    assert "lost" not in reread.state


def test_of_two_stale_copies_appending_at_once_through_two_services_exactly_one_is_stored(where, monkeypatch):
    # Each writer's stale check, once it has read the conversation's end, waits for the
    # other writer to have read it too: if the check and the write were two steps, both
    # would pass and both events be stored. The wait is a bound on a hang (the other writer
    # is held off by the lock, as it must be), never a latency claim.
    both_read = threading.Barrier(2, timeout=1)
    checked = adk._unless_stale

    def check_then_wait(*args):
        found = checked(*args)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_read.wait()
        return found

    monkeypatch.setattr(adk, "_unless_stale", check_then_wait)

    async def scenario():
        async with service(where) as here, service(where) as there:
            await here.create_session(app_name=APP, user_id="ana", session_id="raced")
            copies = [await s.get_session(app_name=APP, user_id="ana", session_id="raced") for s in (here, there)]
            results = await asyncio.gather(*(s.append_event(copy, event(n))
                                             for n, (s, copy) in enumerate(zip((here, there), copies), 1)),
                                           return_exceptions=True)
            return results, await here.get_session(app_name=APP, user_id="ana", session_id="raced")

    results, reread = asyncio.run(scenario())
    assert sorted(type(r).__name__ for r in results) == ["Event", "StaleSessionError"]
    assert [e.id for e in reread.events] == [next(r.id for r in results if isinstance(r, Event))]


def test_eight_runs_from_two_processes_lose_and_repeat_nothing(where):
    location, options = where

    async def create():
        async with service(where) as sessions:
            return (await sessions.create_session(app_name=APP, user_id="ana")).id

    session_id = asyncio.run(create())
    workers = [subprocess.Popen([sys.executable, str(WORKER), location, json.dumps(options), session_id, name, "4"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for name in ("north", "south")]
    acknowledged = []
    for worker in workers:
        out, err = worker.communicate(timeout=240)
        assert worker.returncode == 0, err
        acknowledged += json.loads(out)
    with store_of(where) as store:
        rows = store.transcript(session_id)
        user_state = store.get_session(next(s.id for s in store.list_sessions(source="adk-state", include_hidden=True).items
                                            if s.user_id == "ana")).metadata
    uids = [m.uid for m in rows]
    assert len(uids) == len(set(uids)) == 8 * 4  # each run: question, call, response, answer
    assert set(acknowledged) <= set(uids)
    cities = [f"{name}city{i}" for name in ("north", "south") for i in range(4)]
    asked = [m.text for m in rows if m.role == "user"]
    assert sorted(asked) == sorted(f"Weather in {c}?" for c in cities)
    assert sorted(m.text for m in rows if m.role == "assistant" and m.text) == sorted(
        f"The forecast: sunny in {c}." for c in cities)
    assert {f"state:asked_{c}" for c in cities} <= set(user_state)  # every run's user: key, from both processes


def test_two_processes_appending_to_one_session_keep_every_event_once_in_each_writer_s_order(tmp_path):
    path, count = str(tmp_path / "agents.db"), 40

    async def create():
        async with SessiondbSessionService(path) as sessions:
            return (await sessions.create_session(app_name="travel", user_id="ana")).id

    session_id = asyncio.run(create())
    writers = {name: subprocess.Popen([sys.executable, str(APPENDER), path, session_id, name, str(count)],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CHILD_ENV)
               for name in ("north", "south")}
    acknowledged = {}
    for name, writer in writers.items():
        out, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err
        acknowledged[name] = json.loads(out)

    async def read():
        async with SessiondbSessionService(path) as sessions:
            return await sessions.get_session(app_name="travel", user_id="ana", session_id=session_id)

    stored = [e.id for e in asyncio.run(read()).events]
    assert sorted(stored) == sorted(f"{name}-{i}" for name in writers for i in range(count))  # each once
    for name in writers:
        mine = [i for i in stored if i.startswith(f"{name}-")]
        assert mine == acknowledged[name] == [f"{name}-{i}" for i in range(count)]  # in the order it wrote


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_compaction_during_a_run_loses_no_event(where, mode):
    model = ScriptedModel(model="scripted")
    summary = "Summary: the user asked about Kyoto; it is sunny there."

    async def scenario():
        with store_of(where) as store:
            async with SessiondbSessionService(store=store) as sessions:
                session = await sessions.create_session(app_name=APP, user_id="ana", session_id="long-trip")
                run = runner(sessions, model=model)
                first = await ask(run, "ana", session.id, "Weather in Kyoto?")
                lease = store.begin_compaction(session.id)  # taken before the second turn...

                def commit_midway(number):  # ...and committed between its function call and response
                    if number == 3:
                        store.commit_compaction(lease, [{"role": "user", "content": summary}], mode=mode)

                model.on_request = commit_midway
                second = await ask(run, "ana", session.id, "Weather in Osaka?")
                model.on_request = None
                third = await ask(run, "ana", session.id, "Weather in Nara?")
                reread = await sessions.get_session(app_name=APP, user_id="ana", session_id=session.id)
                listed = [s.id for s in (await sessions.list_sessions(app_name=APP)).sessions]
                everything = [m.uid for s in store.lineage(session.id)
                              for m in store.transcript(s.id, include_compacted=True)]
                await sessions.delete_session(app_name=APP, user_id="ana", session_id=session.id)
                left = store.list_sessions(source="adk", include_archived=True, include_hidden=True).items
                return first + second + third, reread, listed, everything, left

    yielded, reread, listed, everything, left = asyncio.run(scenario())
    assert left == []  # deleting the ADK session deleted the whole conversation, continuation included
    assert listed == ["long-trip"]  # a rotation's continuation is the same ADK session
    assert len(everything) == len(set(everything)) == 3 * 4 + 1  # every event once, and the summary
    assert {e.id for e in yielded} <= set(everything)
    assert [said(p) for p in model.requests[-1][0].parts][0].endswith(summary)  # the model now starts from it
    assert [said(e.content.parts[0]) for e in reread.events][1:] == [
        "Weather in Osaka?", "call weather {'city': 'Osaka'}", "response weather {'forecast': 'sunny in Osaka'}",
        "The forecast: sunny in Osaka.", "Weather in Nara?", "call weather {'city': 'Nara'}",
        "response weather {'forecast': 'sunny in Nara'}", "The forecast: sunny in Nara."]


def test_memory_finds_an_earlier_sessions_words(where):
    location, open_options = where

    async def scenario():
        async with service(where) as sessions, SessiondbMemoryService(location, **open_options) as memory:
            run = runner(sessions, memory_service=memory)
            earlier = await sessions.create_session(app_name=APP, user_id="ana")
            await ask(run, "ana", earlier.id, "Weather in Kyōto?")
            earlier = await sessions.get_session(app_name=APP, user_id="ana", session_id=earlier.id)
            await memory.add_session_to_memory(earlier)
            await memory.add_session_to_memory(earlier)  # again: nothing stored twice
            bens = await sessions.create_session(app_name=APP, user_id="ben")
            await ask(run, "ben", bens.id, "Weather in Lisbon?")
            kept_elsewhere = InMemorySessionService()  # a session another service holds is copied in
            other = await kept_elsewhere.create_session(app_name=APP, user_id="ana", session_id="elsewhere")
            await kept_elsewhere.append_event(other, event(1, "Pack the umbrella for Porto"))
            await memory.add_session_to_memory(other)
            namesake = await kept_elsewhere.create_session(app_name=APP, user_id="ben", session_id=earlier.id)
            await kept_elsewhere.append_event(namesake, event(2, "Pack the scarf for Oslo"))
            await memory.add_session_to_memory(namesake)  # ana's session id, ben's own session
            found = {(u, q): (await memory.search_memory(app_name=APP, user_id=u, query=q)).memories
                     for u, q in (("ana", "kyoto"), ("ana", "lisbon"), ("ben", "kyoto"), ("ana", "umbrella"),
                                  ("ben", "scarf"), ("ana", "scarf"))}
            return earlier, found

    earlier, found = asyncio.run(scenario())
    kyoto = found["ana", "kyoto"]  # accents folded: "kyoto" finds "Kyōto"
    assert sorted((m.author, m.content.parts[0].text) for m in kyoto) == [
        ("forecaster", "The forecast: sunny in Kyōto."), ("user", "Weather in Kyōto?")]
    assert {m.id for m in kyoto} <= {e.id for e in earlier.events}
    assert {m.timestamp for m in kyoto} == {
        datetime.fromtimestamp(e.timestamp, timezone.utc).isoformat() for e in earlier.events if e.id in {m.id for m in kyoto}}
    assert found["ana", "lisbon"] == [] and found["ben", "kyoto"] == []  # another user's words stay theirs
    assert [m.content.parts[0].text for m in found["ana", "umbrella"]] == ["Pack the umbrella for Porto"]
    assert [m.content.parts[0].text for m in found["ben", "scarf"]] == ["Pack the scarf for Oslo"]
    assert found["ana", "scarf"] == []
    with store_of(where) as store:
        assert len(store.transcript(earlier.id)) == 4
    with pytest.raises(sessiondb.InvalidInput, match="limit"):
        SessiondbMemoryService(location, limit=0, **open_options)


def test_events_added_to_memory_are_added_once_each_to_the_session_named(where):
    location, open_options = where

    async def scenario():
        async with service(where) as sessions, SessiondbMemoryService(location, **open_options) as memory:
            trip = await sessions.create_session(app_name=APP, user_id="ana", session_id="trip")
            await sessions.append_event(trip, event(1, "Book the ferry to Capri"))
            await memory.add_events_to_memory(app_name=APP, user_id="ana", session_id="trip",
                                              events=[event(2, "Pack the sunscreen"), event(1, "Other words, same id")])
            await memory.add_events_to_memory(app_name=APP, user_id="ana", events=[event(3, "Renew the passport")])
            await memory.add_events_to_memory(app_name=APP, user_id="ben", events=[event(3, "Renew the visa")])
            trip = await sessions.get_session(app_name=APP, user_id="ana", session_id="trip")
            found = {(u, q): [m.content.parts[0].text for m in
                              (await memory.search_memory(app_name=APP, user_id=u, query=q)).memories]
                     for u, q in (("ana", "ferry"), ("ana", "passport"), ("ben", "passport"), ("ben", "visa"))}
            return trip, found

    trip, found = asyncio.run(scenario())
    # appended to the session named, not replacing it; an id stored already keeps its first words
    assert [said(e.content.parts[0]) for e in trip.events] == ["Book the ferry to Capri", "Pack the sunscreen"]
    assert found["ana", "ferry"] == ["Book the ferry to Capri"]
    # events given without a session are the user's own, in the app
    assert found["ana", "passport"] == ["Renew the passport"] and found["ben", "passport"] == []
    assert found["ben", "visa"] == ["Renew the visa"]


def test_memory_answers_the_model_s_own_phrasing_as_the_sdk_s_memory_does(where):
    location, open_options = where

    async def scenario():
        kept = InMemorySessionService()
        session = await kept.create_session(app_name=APP, user_id="ana", session_id="toolkits")
        await kept.append_event(session, event(1, "The ADK is a great toolkit."))
        await kept.append_event(session, event(2, "Lunch is at noon."))
        sdk = InMemoryMemoryService()
        await sdk.add_session_to_memory(session)
        async with SessiondbMemoryService(location, **open_options) as memory:
            await memory.add_session_to_memory(session)
            return {name: [m.content.parts[0].text for m in (await service_.search_memory(
                        app_name=APP, user_id="ana", query="How about ADK?")).memories]
                    for name, service_ in (("sdk", sdk), ("sessiondb", memory))}

    found = asyncio.run(scenario())
    assert found["sdk"] == found["sessiondb"] == ["The ADK is a great toolkit."]


def test_memory_ranks_the_most_words_held_then_the_rarer_then_the_order_stored_then_stems(where):
    location, open_options = where
    texts = ["Caroline said hello", "Caroline went out", "I researched painting", "Caroline likes painting",
             "painting class tonight", "Caroline again", "research notes"]

    async def scenario():
        async with service(where) as sessions, SessiondbMemoryService(location, **open_options) as memory:
            session = await sessions.create_session(app_name=APP, user_id="ana", session_id="ranks")
            for number, text in enumerate(texts, 1):
                await sessions.append_event(session, event(number, text))
            return [[m.content.parts[0].text for m in (await memory.search_memory(
                        app_name=APP, user_id="ana", query=query)).memories]
                    for query in ("What about Caroline's painting?", "research")]

    painting, research = asyncio.run(scenario())
    # both words first; then the rarer word's match; then the common one's, in the order stored
    assert painting == ["Caroline likes painting", "I researched painting", "painting class tonight",
                        "Caroline said hello", "Caroline went out", "Caroline again"]
    assert research == ["research notes", "I researched painting"]  # held only by its stem: found, after


def test_the_store_is_called_off_the_event_loop(tmp_path, monkeypatch):
    threads = set()
    with sessiondb.open_store(tmp_path / "agents.db") as store:
        for name in ("create_session", "get_session", "append", "list_sessions", "recall"):
            method = getattr(store, name)

            def recorded(*args, _method=method, **kwargs):
                threads.add(threading.current_thread())
                return _method(*args, **kwargs)

            monkeypatch.setattr(store, name, recorded)

        async def scenario():
            async with SessiondbSessionService(store=store) as sessions, SessiondbMemoryService(store=store) as memory:
                session = await sessions.create_session(app_name=APP, user_id="ana")
                await sessions.append_event(session, event(1))
                await sessions.list_sessions(app_name=APP)
                await memory.search_memory(app_name=APP, user_id="ana", query="line")
                return threading.current_thread()

        loop_thread = asyncio.run(scenario())
        assert threads and loop_thread not in threads
        assert store.get_session(next(iter(store.list_sessions().items)).id)  # a handed-in store stays open
