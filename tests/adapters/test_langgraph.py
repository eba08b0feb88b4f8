"""LangGraph's checkpoint saver on sessiondb: the SDK's conformance suite and real graphs,
on both backends."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
from pathlib import Path
from collections import Counter
from typing import Annotated, TypedDict

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import sessiondb
from sessiondb.adapters.binding import user_session_id
from sessiondb.adapters.langgraph import SessiondbSaver
from sessiondb.adapters.langgraph_records import Arrivals, session_id_of


@pytest.mark.parametrize("user_id", [None, "alice"])
def test_the_conformance_suite_passes(store, user_id):
    @checkpointer_test(name="SessiondbSaver")
    async def saver():
        yield SessiondbSaver(store=store, user_id=user_id)

    report = asyncio.run(validate(saver))
    failures = {name: r.failures for name, r in report.results.items() if r.detected and not r.passed}
    assert not failures, failures
    assert report.passed_all_base()
    assert {name for name, r in report.results.items() if r.passed} == {
        "put", "put_writes", "get_tuple", "list", "delete_thread", "copy_thread", "prune", "delete_for_runs"}


class Chat(TypedDict):
    messages: Annotated[list, add_messages]
    turns: int


def chat_graph(saver, replies):
    model = GenericFakeChatModel(messages=iter(replies))

    def answer(state: Chat) -> dict:
        return {"messages": [model.invoke(state["messages"])], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(Chat)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


def test_a_graph_carries_its_state_from_one_invocation_to_the_next(store_place):
    location, options = store_place
    config = {"configurable": {"thread_id": "kyoto"}}
    with SessiondbSaver(location=location, **options) as saver:
        graph = chat_graph(saver, [AIMessage("Sunny."), AIMessage("Take a hat.")])
        graph.invoke({"messages": [HumanMessage("Weather in Kyoto?")]}, config)
    with SessiondbSaver(location=location, **options) as saver:  # another handle: only the store remembers
        graph = chat_graph(saver, [AIMessage("Take a hat.")])
        state = asyncio.run(graph.ainvoke({"messages": [HumanMessage("What should I bring?")]}, config))
        assert state["turns"] == 2
        assert [m.content for m in state["messages"]] == [
            "Weather in Kyoto?", "Sunny.", "What should I bring?", "Take a hat."]
        history = list(graph.get_state_history(config))
        assert len(history) == 6 and history[0].values == state  # input, start, answer: per run
        # an earlier checkpoint is still there, exactly: time travel reads it back
        first_answer = [h for h in history if h.values.get("turns") == 1][-1]  # the oldest
        assert [m.content for m in first_answer.values["messages"]] == ["Weather in Kyoto?", "Sunny."]
        session = saver.store.get_session(session_id_of("kyoto"))
        assert (session.source, session.thread_id) == ("langgraph", "kyoto")


def test_a_state_holding_half_a_character_comes_back_as_the_sdk_s_own_saver_gives_it(store):
    config = {"configurable": {"thread_id": "cut"}}
    said = [HumanMessage("a string cut inside an emoji: \ud83d")]
    invoked, kept = [], []
    for saver in (InMemorySaver(), SessiondbSaver(store=store)):
        invoked.append([m.content for m in chat_graph(saver, [AIMessage("\udc00 noted")]).invoke(
            {"messages": said}, config)["messages"]])
        kept.append([m.content for m in chat_graph(saver, []).get_state(config).values["messages"]])
    assert invoked == [["a string cut inside an emoji: \ud83d", "\udc00 noted"]] * 2
    # LangGraph's own serializer writes half a character as "?", for its savers as for sessiondb's
    assert kept == [["a string cut inside an emoji: ?", "? noted"]] * 2


def test_a_value_shared_by_checkpoints_is_stored_once(store):
    saver = SessiondbSaver(store=store)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    big = "the same long system prompt " * 100
    for step in range(5):  # the prompt is written at step 1 and never again
        values, versions = {"step": step}, {"step": step + 1}
        if step:
            values["prompt"], versions["prompt"] = big, 1
        checkpoint = {"v": 1, "id": f"1ef{step:033d}", "ts": "2026-12-01T10:00:00+00:00",
                      "channel_values": values, "channel_versions": versions, "versions_seen": {}}
        new = {"prompt": 1, "step": step + 1} if step == 1 else {"step": step + 1}
        config = saver.put(config, checkpoint, {"source": "loop", "step": step}, new)
    rows = store.transcript(session_id_of("t"))
    assert len(rows) == 5
    blob = base64.b64encode(saver.serde.dumps_typed(big)[1]).decode()
    assert sum(json.dumps(r.content).count(blob) for r in rows) == 1
    for tup in saver.list({"configurable": {"thread_id": "t"}}):
        assert tup.checkpoint["channel_values"].get("prompt") == (big if tup.metadata["step"] else None)
    # a copy refers to its own copy of the record, read at its id: one page, one read
    saver.copy_thread("t", "copy")
    calls = counting_reads(store)
    assert saver.get_tuple({"configurable": {"thread_id": "copy"}}).checkpoint["channel_values"]["prompt"] == big
    assert len(calls) == 2


def counting_reads(store) -> list[int]:
    """The number of rows each transcript() call of `store` returns from now on."""
    calls: list[int] = []
    real = store.transcript

    def counting(*args, **kwargs):
        rows = real(*args, **kwargs)
        calls.append(len(rows))
        return rows

    store.transcript = counting
    return calls


def test_a_retry_storm_stores_nothing_twice(store):
    saver = SessiondbSaver(store=store)
    base = {"configurable": {"thread_id": "storm", "checkpoint_ns": ""}}
    checkpoint = {"v": 1, "id": "1ef00000000000000000000000000001", "ts": "2026-12-01T10:00:00+00:00",
                  "channel_values": {"x": [1, 2]}, "channel_versions": {"x": 1}, "versions_seen": {}}

    def retry():
        for _ in range(10):
            stored = saver.put(base, checkpoint, {"source": "input", "step": -1}, {"x": 1})
            saver.put_writes(stored, [("x", [3]), ("y", "why")], "task-1", "a")
            saver.put_writes(stored, [("__error__", "boom")], "task-2")

    workers = [threading.Thread(target=retry) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    rows = store.transcript(session_id_of("storm"))
    assert len(rows) == 4 and len({r.uid for r in rows}) == 4
    tup = saver.get_tuple(base)
    assert tup.pending_writes == [("task-2", "__error__", "boom"), ("task-1", "x", [3]), ("task-1", "y", "why")]
    # the task's next attempt fails otherwise: its new error stands, the first is kept beside it
    saver.put_writes(tup.config, [("__error__", "boom again")], "task-2")
    assert saver.get_tuple(base).pending_writes[0] == ("task-2", "__error__", "boom again")
    # a task's write stored once stays as it was; what else the batch holds is stored
    saver.put_writes(tup.config, [("x", [99]), ("y", "why"), ("z", "zed")], "task-1", "a")
    assert saver.get_tuple(base).pending_writes[1:] == [("task-1", "x", [3]), ("task-1", "y", "why"),
                                                        ("task-1", "z", "zed")]


def test_eight_threads_at_once_each_keep_their_own_state(store):
    saver = SessiondbSaver(store=store)
    errors = []

    def run(n: int) -> None:
        try:
            graph = chat_graph(saver, [AIMessage(f"answer {n}.{i}") for i in range(3)])
            for i in range(3):
                graph.invoke({"messages": [HumanMessage(f"question {n}.{i}")]},
                             {"configurable": {"thread_id": f"thread-{n}"}})
        except Exception as exc:  # noqa: BLE001 - reported below, with the thread it failed in
            errors.append((n, exc))

    runs = [threading.Thread(target=run, args=(n,)) for n in range(8)]
    for each in runs:
        each.start()
    for each in runs:
        each.join()
    assert not errors
    for n in range(8):
        config = {"configurable": {"thread_id": f"thread-{n}"}}
        state = saver.get_tuple(config).checkpoint["channel_values"]
        assert state["turns"] == 3
        assert [m.content for m in state["messages"]] == [
            text for i in range(3) for text in (f"question {n}.{i}", f"answer {n}.{i}")]
        ids = [t.checkpoint["id"] for t in saver.list(config)]
        assert len(ids) == 9 == len(set(ids))
    everything = [t.config["configurable"]["thread_id"] for t in saver.list(None)]  # every thread of the store
    assert Counter(everything) == {f"thread-{n}": 9 for n in range(8)}


WRITER = """
import sys
import sessiondb
from langchain_core.messages import AIMessage, HumanMessage
sys.path.insert(0, {tests!r})
from test_langgraph import chat_graph
from sessiondb.adapters.langgraph import SessiondbSaver

with SessiondbSaver({location!r}, **{options!r}) as saver:
    graph = chat_graph(saver, [AIMessage("answer " + sys.argv[1] + "." + str(i)) for i in range(4)])
    for i in range(4):
        graph.invoke({{"messages": [HumanMessage("question " + sys.argv[1] + "." + str(i))]}},
                     {{"configurable": {{"thread_id": "shared"}}}})
"""


def test_two_processes_on_one_thread_lose_and_double_nothing(store_place, tmp_path):
    location, options = store_place
    program = WRITER.format(tests=str(Path(__file__).parent), location=location,
                            options=options)
    procs = [subprocess.Popen([sys.executable, "-c", program, name], stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=240) == 0, proc.stderr.read()
    with SessiondbSaver(location=location, **options) as saver:
        config = {"configurable": {"thread_id": "shared"}}
        tuples = list(saver.list(config))
        # every invocation stored its input and its answer checkpoint, once
        assert len(tuples) == 24 == len({t.checkpoint["id"] for t in tuples})
        rows = saver.store.transcript(session_id_of("shared"))
        assert Counter(r.uid for r in rows).most_common(1)[0][1] == 1
        # every answer either process gave is in some checkpoint, read back exactly
        answers = {m.content for t in tuples for m in t.checkpoint["channel_values"].get("messages", [])
                   if isinstance(m, AIMessage)}
        assert answers == {f"answer {p}.{i}" for p in "ab" for i in range(4)}
        for t in tuples:
            assert saver.get_tuple(t.config).checkpoint == t.checkpoint


def test_the_latest_checkpoint_of_a_long_thread_is_read_from_its_end(store):
    saver = SessiondbSaver(store=store)
    graph = chat_graph(saver, [AIMessage(f"answer {i}") for i in range(51)])
    config = {"configurable": {"thread_id": "long"}}
    for i in range(50):
        graph.invoke({"messages": [HumanMessage(f"q {i}")]}, config)
    assert len(store.transcript(session_id_of("long"))) > 4 * 64  # a thread of ~300 records
    read = counting_reads(store)
    latest = saver.get_tuple(config)
    assert latest.checkpoint["channel_values"]["turns"] == 50
    assert sum(read) <= 64  # one page from its end
    read.clear()
    graph.invoke({"messages": [HumanMessage("one more")]}, config)
    assert sum(read) <= 4 * 64  # the run's reads and its puts' parent lookups stay at the end


def test_a_thread_stored_as_one_user_has_no_checkpoint_for_another_under_the_same_thread_id(store):
    alice, bob = SessiondbSaver(store=store, user_id="alice"), SessiondbSaver(store=store, user_id="bob")
    as_alice = {"configurable": {"thread_id": "kyoto", "user_id": "alice"}}  # as LangGraph's memory docs pass it
    as_bob = {"configurable": {"thread_id": "kyoto", "user_id": "bob"}}
    chat_graph(alice, [AIMessage("Sunny.")]).invoke({"messages": [HumanMessage("Weather in Kyoto?")]}, as_alice)
    assert bob.get_tuple(as_bob) is None and [*bob.list(as_bob)] == [] and [*bob.list(None)] == []
    bob.delete_thread("kyoto")
    bob.prune(["kyoto"], strategy="delete")
    state = chat_graph(bob, [AIMessage("Hello Bob.")]).invoke({"messages": [HumanMessage("I am Bob.")]}, as_bob)
    assert [m.content for m in state["messages"]] == ["I am Bob.", "Hello Bob."] and state["turns"] == 1

    mine = alice.get_tuple(as_alice).checkpoint["channel_values"]
    assert [m.content for m in mine["messages"]] == ["Weather in Kyoto?", "Sunny."]
    assert {t.config["configurable"]["thread_id"] for t in alice.list(None)} == {"kyoto"}
    assert len([*alice.list(None)]) == len([*alice.list(as_alice)]) == 3
    assert [*SessiondbSaver(store=store).list(None)] == []  # no user's thread is a thread without a user
    [session] = store.list_sessions(user_id="alice").items
    assert (session.id, session.thread_id) == (user_session_id("langgraph", "alice", "kyoto"), "kyoto")


def test_without_a_user_a_thread_is_stored_under_its_thread_id_and_read_as_before(store):
    config = {"configurable": {"thread_id": "kyoto"}}
    chat_graph(SessiondbSaver(store=store), [AIMessage("Sunny.")]).invoke(
        {"messages": [HumanMessage("Weather in Kyoto?")]}, config)
    alice = SessiondbSaver(store=store, user_id="alice")
    assert alice.get_tuple(config) is None  # no user's thread
    chat_graph(alice, [AIMessage("Cloudy.")]).invoke({"messages": [HumanMessage("Weather in Kyoto?")]}, config)
    again = SessiondbSaver(store=store)
    assert [m.content for m in again.get_tuple(config).checkpoint["channel_values"]["messages"]] == [
        "Weather in Kyoto?", "Sunny."]
    assert [t.config["configurable"]["thread_id"] for t in again.list(None)] == ["kyoto"] * 3  # not Alice's too
    assert store.get_session("langgraph:kyoto").user_id is None


def test_a_config_without_a_thread_is_refused(store):
    saver = SessiondbSaver(store=store)
    with pytest.raises(sessiondb.InvalidInput, match="thread_id"):
        saver.get_tuple({"configurable": {}})
    with pytest.raises(sessiondb.InvalidInput, match="checkpoint_id"):
        saver.put_writes({"configurable": {"thread_id": "t"}}, [("x", 1)], "task")
    assert store.list_sessions().items == []


def appended(state: list, batches: list) -> list:
    return [*state, *(item for batch in batches for item in batch)]


class Notes(TypedDict):
    notes: Annotated[list, DeltaChannel(appended, snapshot_frequency=4)]


def notes_graph(saver):
    """A graph whose `notes` channel is a delta channel: its checkpoints store a snapshot every
    4th update and nothing else of it; a read rebuilds it from the writes since."""
    builder = StateGraph(Notes)
    builder.add_node("note", lambda state: {"notes": [f"note {len(state['notes'])}"]})
    builder.add_edge(START, "note")
    builder.add_edge("note", END)
    return builder.compile(checkpointer=saver)


def take_notes(graph, thread_id: str, turns: range) -> list:
    config = {"configurable": {"thread_id": thread_id}}
    for turn in turns:
        state = graph.invoke({"notes": [f"turn {turn}"]}, config)
    return state["notes"]


def test_a_delta_channel_is_rebuilt_as_the_sdk_own_saver_rebuilds_it(store):
    saver = SessiondbSaver(store=store)
    ours, theirs = notes_graph(saver), notes_graph(InMemorySaver())
    assert take_notes(ours, "t", range(7)) == take_notes(theirs, "t", range(7))
    latest = saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert "notes" not in latest.checkpoint["channel_values"]  # rebuilt from the history, not stored
    # the history is one walk back from the thread's end (and the seed read where it is held),
    # not a walk per ancestor as the base class's get_tuple after get_tuple
    thread = len(store.transcript(session_id_of("t")))
    read = counting_reads(store)
    history = saver.get_delta_channel_history(config=latest.config, channels=["notes"])
    assert "seed" in history["notes"] and history["notes"]["writes"]
    assert sum(read) <= thread + 1
    read.clear()
    assert BaseCheckpointSaver.get_delta_channel_history(saver, config=latest.config, channels=["notes"]) == history
    assert sum(read) > 2 * thread


def test_prune_keeps_the_latest_checkpoint_and_what_its_delta_channels_need(store):
    saver = SessiondbSaver(store=store)
    graph, control = notes_graph(saver), notes_graph(InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    take_notes(graph, "t", range(7))  # 14 updates of the notes: the latest checkpoint is no snapshot
    take_notes(control, "t", range(7))
    before = len(store.transcript(session_id_of("t")))
    saver.prune(["t"])
    kept = list(saver.list(config))
    latest = kept[0]
    # the ancestors back to the notes' last snapshot stay, every other checkpoint is archived
    assert 1 < len(kept) < 21
    assert "notes" in kept[-1].checkpoint["channel_values"]
    assert len(store.transcript(session_id_of("t"))) < before
    assert len(store.transcript(session_id_of("t"), include_compacted=True)) == before + 1  # archived, and the marker
    assert graph.get_state(config).values == control.get_state(config).values
    assert take_notes(graph, "t", range(7, 10)) == take_notes(control, "t", range(7, 10))
    assert saver.get_tuple(latest.config).checkpoint == latest.checkpoint
    # a copy of the pruned thread holds every value it needs, the archived ones inline
    saver.copy_thread("t", "copy")
    assert [t.checkpoint for t in saver.list({"configurable": {"thread_id": "copy"}})] == [
        t.checkpoint for t in saver.list(config)]
    saver.prune(["t", "copy"], strategy="delete")
    assert list(saver.list(None)) == []
    with pytest.raises(sessiondb.NotFound):
        store.get_session(session_id_of("t"))


def test_delete_for_runs_archives_those_runs_and_the_thread_goes_on(store):
    saver = SessiondbSaver(store=store)
    graph = chat_graph(saver, [AIMessage(f"answer {i}") for i in range(3)])
    config = {"configurable": {"thread_id": "t"}}
    for i, run in enumerate(["run-a", "run-b"]):
        # a run's id, as LangGraph's server gives it, is in every checkpoint's metadata
        graph.invoke({"messages": [HumanMessage(f"question {i}")]}, {"configurable": {"thread_id": "t", "run_id": run}})
    assert Counter(t.metadata["run_id"] for t in saver.list(config)) == {"run-a": 3, "run-b": 3}
    saver.delete_for_runs(["run-a"])
    assert [t.metadata["run_id"] for t in saver.list(config)] == ["run-b"] * 3
    state = graph.invoke({"messages": [HumanMessage("question 2")]}, config)
    assert state["turns"] == 3 and len(state["messages"]) == 6


WRITER_OF_A_CHAIN = """
import sys
from langgraph.checkpoint.base import empty_checkpoint
from sessiondb.adapters.langgraph import SessiondbSaver

name, count = sys.argv[1], int(sys.argv[2])
with SessiondbSaver({location!r}, **{options!r}) as saver:
    print("ready", flush=True)
    sys.stdin.readline()  # both start putting together
    config = {{"configurable": {{"thread_id": "shared"}}}}
    for step in range(count):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"], checkpoint["channel_versions"] = {{"step": step}}, {{"step": step + 1}}
        config = saver.put(config, checkpoint, {{"source": "loop", "step": step, "writer": name}}, {{"step": step + 1}})
        saver.put_writes(config, [("log", f"{{name}} {{step}} a"), ("log", f"{{name}} {{step}} b")], f"task-{{step}}")
"""


def test_two_processes_putting_on_one_thread_keep_every_checkpoint_in_its_order(store_place):
    """Each writer builds its own chain of checkpoints on one thread, at once."""
    location, options = store_place
    program = WRITER_OF_A_CHAIN.format(location=location, options=options)
    procs = [subprocess.Popen([sys.executable, "-c", program, name, "40"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("a", "b")]
    for proc in procs:
        assert proc.stdout.readline() == "ready\n", proc.stderr.read()
    for proc in procs:
        proc.stdin.write("go\n")
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=240) == 0, proc.stderr.read()
    with SessiondbSaver(location=location, **options) as saver:
        everything = list(saver.list({"configurable": {"thread_id": "shared"}}))
        assert len(everything) == 80
        for name in ("a", "b"):
            chain = [t for t in everything if t.metadata["writer"] == name]
            # newest first: every step, once, in the order it was put, each on its parent
            assert [t.metadata["step"] for t in chain] == list(range(39, -1, -1))
            assert [t.checkpoint["channel_values"] for t in chain] == [{"step": s} for s in range(39, -1, -1)]
            assert all(t.parent_config == older.config for t, older in zip(chain, chain[1:]))
            assert [t.pending_writes for t in chain] == [
                [(f"task-{s}", "log", f"{name} {s} a"), (f"task-{s}", "log", f"{name} {s} b")] for s in range(39, -1, -1)]
            assert saver.get_tuple(chain[0].config) == chain[0]
        rows = saver.store.transcript(session_id_of("shared"))
        assert len(rows) == 2 * 40 * 3 == len({r.uid for r in rows})


def test_a_write_stored_before_its_checkpoint_and_its_parent_is_read_with_it(store):
    """LangGraph stores a step's checkpoint and its tasks' writes at once, from a pool of
    threads: here the write of the second checkpoint lands first of all."""
    saver = SessiondbSaver(store=store)
    base = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    first, second = ({"v": 1, "id": f"1ef{n:033d}", "ts": "2026-12-01T10:00:00+00:00", "channel_values": {},
                      "channel_versions": {}, "versions_seen": {}} for n in (1, 2))
    saver.put_writes({"configurable": {**base["configurable"], "checkpoint_id": second["id"]}},
                     [("notes", "early")], "task-1")
    stored = saver.put(saver.put(base, first, {"step": 0}, {}), second, {"step": 1}, {})
    assert saver.get_tuple(stored).pending_writes == [("task-1", "notes", "early")]
    assert saver.get_delta_channel_history(config=saver.put(stored, {**first, "id": f"1ef{3:033d}"}, {}, {}),
                                           channels=["notes"])["notes"]["writes"] == [("task-1", "notes", "early")]


def test_of_a_checkpoint_and_its_writes_the_one_landing_second_finds_the_writes_stored_before_the_record():
    arrivals, key = Arrivals(), ("langgraph:t", "", "checkpoint-b")
    assert arrivals.writes(key, [(1, {"uid": "w1"})]) == []  # its record has not landed yet
    assert arrivals.checkpoint(key, 3) == [{"uid": "w1"}]
    # appended before the record, but done after it: the write's own put_writes finds it
    assert arrivals.writes(key, [(2, {"uid": "w2"}), (4, {"uid": "w3"})]) == [{"uid": "w2"}]
    assert arrivals.writes(("langgraph:t", "", "another"), [(5, {"uid": "w4"})]) == []


def test_a_thread_archived_twice_reads_every_shared_value_at_its_message_id(store):
    """A compaction renumbers the records it keeps; the values other checkpoints share
    by message id are still read there, archived, not looked for along the thread."""
    saver = SessiondbSaver(store=store)
    graph = chat_graph(saver, [AIMessage(f"answer {i}") for i in range(5)])
    config = {"configurable": {"thread_id": "t"}}
    for i in range(5):
        graph.invoke({"messages": [HumanMessage(f"question {i}")]}, {"configurable": {"thread_id": "t", "run_id": f"run-{i}"}})
    kept = [t for t in saver.list(config) if t.metadata["run_id"] != "run-4"]
    saver.delete_for_runs(["run-4"])
    tuples = list(saver.list(config))
    assert [t.checkpoint for t in tuples] == [t.checkpoint for t in kept]
    assert any(r.content[0]["refs"] for r in store.transcript(session_id_of("t")) if r.display_kind == "langgraph.checkpoint")
    for t in tuples:  # one page from the thread's end, then each shared value at its message id
        read = counting_reads(store)
        assert saver.get_tuple(t.config) == t
        assert all(rows == 1 for rows in read[1:]) and len(read) <= 1 + len(t.checkpoint["channel_values"])
        del store.transcript  # counting no more
    saver.prune(["t"])
    assert [t.checkpoint for t in saver.list(config)] == [kept[0].checkpoint]
    state = graph.get_state(config).values
    assert state["turns"] == 4 and [m.content for m in state["messages"]][-1] == "answer 3"


def test_a_checkpoint_shares_the_values_of_a_parent_older_than_the_newest_records(store):
    """The parent is looked for among the thread's newest records, then page by page along
    the thread: found either way, its unchanged values are shared, not stored again."""
    from langgraph.checkpoint.base import empty_checkpoint

    saver = SessiondbSaver(store=store)
    parent = {**empty_checkpoint(), "id": "1", "channel_values": {"notes": "long"}, "channel_versions": {"notes": 1}}
    config = saver.put({"configurable": {"thread_id": "t", "checkpoint_ns": ""}}, parent, {}, {"notes": 1})
    saver.put_writes(config, [(f"channel-{i}", i) for i in range(70)], "task")  # 70 records after it
    child = {**parent, "id": "2"}
    saver.put(config, child, {}, {})
    records = [m.content[0] for m in store.transcript(session_id_of("t")) if m.display_kind == "langgraph.checkpoint"]
    assert [(r["id"], bool(r["refs"]), bool(r["blobs"])) for r in records] == [("1", False, True), ("2", True, False)]
    assert saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "2"}}
                           ).checkpoint["channel_values"] == {"notes": "long"}
