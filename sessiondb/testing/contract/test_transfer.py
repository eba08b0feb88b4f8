"""Lossless export and import: a round trip reproduces every session, message and usage row;
a bad record is named by its line and nothing of its session is written; the in-memory
export refuses sessions over its size guard."""

from __future__ import annotations

import json
import tracemalloc

import pytest

import sessiondb
from sessiondb import InvalidInput, NotFound, SessionTooLarge, TitleConflict


def fill(store):
    """Sessions exercising every column: lineage, flags, metadata, all states, parts, usage."""
    parent = store.create_session("telegram", title="Parent", session_key="agent:main:telegram:dm:1",
                                  user_id="u1", chat_id="c1", chat_type="dm", model="m1", metadata={"k": [1, "é"]})
    store.append(parent.id, [
        {"uid": "p1", "role": "system", "content": "be brief"},
        {"uid": "p2", "role": "user", "content": "hello", "timestamp": 1000.5},
        {"uid": "p3", "role": "assistant", "content": None, "reasoning": "think",
         "tool_calls": [{"id": "t1", "function": {"name": "grep", "arguments": "{\"q\": 1}"}}],
         "finish_reason": "tool_calls", "token_count": 12},
        {"uid": "p4", "role": "tool", "content": "found it", "tool_call_id": "t1", "tool_name": "grep"},
        {"uid": "p5", "role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url", "u": 1}]},
        {"uid": "p6", "role": "assistant", "content": "old", "state": "compacted"},
        {"uid": "p7", "role": "user", "content": "undone", "state": "rewound"},
        {"uid": "p8", "role": "user", "content": "ping", "display_kind": "internal_notification"},
    ])
    store.record_usage(parent.id, model="m1", provider="p", input_tokens=10, output_tokens=5, cost_usd=0.25)
    store.record_usage(parent.id, model="m2", task="summary", input_tokens=1)
    store.end_session(parent.id, "user_exit")
    child = store.create_session("telegram", parent_session_id=parent.id)
    store.append(child.id, {"uid": "c1", "role": "user", "content": "continued 東京"})
    store.set_flags(child.id, pinned=True, hidden=True)
    other = store.create_session("cli", title="Archived")
    store.set_flags(other.id, archived=True)
    return parent, child, other


def snapshot(store):
    out = {}
    page = store.list_sessions(include_archived=True, include_hidden=True, limit=1000)
    for s in page.items:
        out[s.id] = (
            s.to_dict(),
            [{k: v for k, v in m.to_dict().items() if k != "id"} for m in _all_messages(store, s.id)],
            store.usage(s.id).to_dict(),
        )
    return out


def _all_messages(store, sid):
    records = store.export_session(sid)["messages"]
    return [sessiondb.Message(**{k: r[k] for k in ("id", "session_id", "uid", "seq", "role")},
                              content=json.loads(json.dumps(r["parts"])) if r["parts"] is not None else r["content"],
                              tool_calls=r["tool_calls"], tool_call_id=r["tool_call_id"], tool_name=r["tool_name"],
                              reasoning=r["reasoning"], finish_reason=r["finish_reason"],
                              token_count=r["token_count"], timestamp=r["timestamp"],
                              display_kind=r["display_kind"], state=r["state"]) for r in records]


def lines(store, ids=None):
    return [json.dumps(r) for r in store.export(ids)]


@pytest.fixture
def source(open_backend):
    store = open_backend("source")
    fill(store)
    return store


@pytest.fixture
def target(open_backend):
    return open_backend("target")


def test_export_then_import_into_an_empty_store_reproduces_everything(source, target):
    report = target.import_records(lines(source))
    assert (report.sessions_created, report.messages_imported, report.usage_rows_imported) == (3, 9, 2)
    assert report.messages_skipped == 0 and report.detached == []
    assert snapshot(target) == snapshot(source)
    [hit] = target.search("東京")  # the imported messages are indexed by the same triggers
    assert hit.uid == "c1"


def test_the_export_carries_every_column_every_state_and_lineage(source):
    records = [json.loads(line) for line in lines(source)]
    header = records[0]
    assert header["format"] == "sessiondb-export" and header["version"] == 2
    sessions = [r["session"] for r in records if r["type"] == "session"]
    assert sessions[1]["parent_session_id"] == sessions[0]["id"]  # parents first
    assert {"pinned", "archived", "hidden", "metadata", "message_count", "parent_session_id"} <= set(sessions[0])
    states = {r["message"]["state"] for r in records if r["type"] == "message"}
    assert states == {"active", "compacted", "rewound"}
    assert [r["type"] for r in records].count("end") == 3


def test_importing_again_skips_what_is_stored(source, target):
    target.import_records(lines(source))
    before = snapshot(target)
    report = target.import_records(lines(source))
    assert (report.sessions_created, report.sessions_merged) == (0, 3)
    assert (report.messages_imported, report.messages_skipped, report.usage_rows_skipped) == (0, 9, 2)
    assert snapshot(target) == before


def test_an_import_adds_only_the_missing_messages_of_a_stored_session(source, target):
    sid = source.list_sessions(include_archived=True, include_hidden=True).items[-1].id  # the parent
    target.import_records(lines(source))
    source.append(sid, {"uid": "late", "role": "user", "content": "one more"})
    report = target.import_records(lines(source, [sid]))
    assert (report.messages_imported, report.messages_skipped) == (1, 8)
    assert target.get_session(sid).message_count == source.get_session(sid).message_count


def test_a_child_exported_without_its_parent_is_imported_detached(source, target):
    child = next(s for s in source.list_sessions(include_hidden=True).items if s.parent_session_id)
    report = target.import_records(lines(source, [child.id]))
    assert report.detached == [child.id] and target.get_session(child.id).parent_session_id is None


def test_a_parent_that_comes_after_its_child_is_relinked(source, target):
    child = next(s for s in source.list_sessions(include_hidden=True).items if s.parent_session_id)
    report = target.import_records(lines(source, [child.id, child.parent_session_id]))
    assert report.detached == [] and target.get_session(child.id).parent_session_id == child.parent_session_id


def bad_import(target, records):
    with pytest.raises(InvalidInput) as caught:
        target.import_records(records)
    assert target.stats().sessions == 0 and target.stats().messages == 0
    return str(caught.value)


def test_a_truncated_line_is_named_and_nothing_of_its_session_is_written(source, target):
    records = lines(source)
    records[3] = records[3][:25]
    assert bad_import(target, records).startswith("line 4: not valid JSON")


def test_a_file_cut_short_is_reported_as_truncated(source, target):
    records = lines(source)[:5]
    assert "truncated" in bad_import(target, records)


def test_a_wrong_type_is_named_by_its_line(source, target):
    records = [json.loads(line) for line in lines(source)]
    records[2]["message"]["seq"] = "two"
    message = bad_import(target, [json.dumps(r) for r in records])
    assert message.startswith("line 3:") and "'seq' must be an integer" in message


def test_an_unknown_format_version_is_refused(source, target):
    records = lines(source)
    records[0] = json.dumps({"format": "sessiondb-export", "version": 99})
    assert bad_import(target, records).startswith("line 1: unknown export format version 99")


@pytest.mark.parametrize("change, expected", [
    (lambda r: r[2]["message"].update(role="robot"), "line 3: the message: role"),
    (lambda r: r[2]["message"].update(state="lost"), "line 3: the message: state"),
    (lambda r: r[2]["message"].update(surprise=1), "line 3: unknown message field(s) 'surprise'"),
    (lambda r: r[1]["session"].update(pinned="yes"), "line 2: the session's 'pinned'"),
    (lambda r: r[1]["session"].update(metadata=[1]), "line 2: the session's 'metadata' must be an object"),
    (lambda r: r[1]["session"].update(metadata={"notes": "n" * 70_000}),
     "line 2: the session's 'metadata' 'notes' is 70,002 bytes as JSON; the limit is 65,536"),
    (lambda r: r[2]["message"].update(reasoning="r" * (4 * 1024 * 1024 + 1)), "line 3: the message: reasoning is"),
    (lambda r: r[3].update(type="mystery"), "line 4: unknown record type 'mystery'"),
    (lambda r: r[3]["message"].update(uid=r[2]["message"]["uid"]), "line 4: message uid"),
    (lambda r: r[0].update(format="other"), "line 1: not a sessiondb export"),
])
def test_invalid_records_are_named_and_nothing_is_written(source, target, change, expected):
    records = [json.loads(line) for line in lines(source)]
    change(records)
    assert bad_import(target, [json.dumps(r) for r in records]).startswith(expected)


def test_a_bad_second_session_keeps_the_first_and_says_so(source, target):
    records = [json.loads(line) for line in lines(source)]
    second = [i for i, r in enumerate(records) if r["type"] == "session"][1]
    records[second + 1]["message"]["role"] = "robot"
    with pytest.raises(InvalidInput, match=f"line {second + 2}: .*the 1 session\\(s\\) before it were imported"):
        target.import_records([json.dumps(r) for r in records])
    assert target.stats().sessions == 1


def test_a_title_another_session_holds_refuses_the_import_and_names_the_cli_step(source, target):
    holder = target.create_session("cli", title="Parent")
    records = lines(source)
    with pytest.raises(TitleConflict) as caught:
        target.import_records(records)
    message = str(caught.value)
    assert message.startswith("line 2: session ") and f"already used by session {holder.id}" in message
    assert "`sessiondb sessions set-title`" in message
    assert target.stats().sessions == 1 and target.stats().messages == 0


def test_a_dry_run_writes_nothing(source, target):
    report = target.import_records(lines(source), dry_run=True)
    assert report.sessions_created == 3 and report.messages_imported == 9 and report.detached == []
    assert target.stats().sessions == 0


def test_unknown_sessions_are_refused_before_anything_is_exported(source):
    with pytest.raises(NotFound):
        source.export(["nope"])


def test_the_in_memory_export_refuses_sessions_over_its_limit(source):
    sid = source.list_sessions(include_archived=True, include_hidden=True).items[-1].id
    assert len(source.export_session(sid)["messages"]) == 8
    with pytest.raises(SessionTooLarge) as caught:
        source.export_session(sid, max_messages=5)
    message = str(caught.value)
    assert "limit of 5" in message and f"sessiondb sessions export --session {sid}" in message
    assert caught.value.limit == 5 and caught.value.count == 8
    assert len(source.export_session(sid, max_messages=0)["messages"]) == 8  # 0 disables


def test_the_size_guard_names_the_profile(open_backend):
    store = open_backend(profile="work")
    sid = store.create_session("cli").id
    store.append(sid, [{"role": "user", "content": "x"}] * 1 + [{"role": "user", "content": "y"}])
    with pytest.raises(SessionTooLarge, match="sessiondb -p work sessions export"):
        store.export_session(sid, max_messages=1)


def test_the_streaming_export_runs_in_constant_memory(open_backend):
    store = open_backend("big", durability="normal")
    sid = store.create_session("cli").id
    body = "z" * 1000
    for start in range(0, 6000, 1000):
        store.append(sid, [{"role": "user", "content": f"{i} {body}"} for i in range(start, start + 1000)])
    tracemalloc.start()
    try:
        written = sum(len(json.dumps(record)) for record in store.export())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written > 6_000_000 and peak < 1_000_000


def test_a_compacted_and_rotated_lineage_survives_the_round_trip(source, target):
    sid = source.create_session("cli", title="Long").id
    source.append(sid, [{"role": "user", "content": f"turn {i}"} for i in range(6)])
    lease = source.begin_compaction(sid)
    child = source.commit_compaction(lease, [{"role": "assistant", "content": "summary"}], mode="rotate")
    target.import_records(lines(source))
    assert snapshot(target) == snapshot(source)
    assert target.get_session(child.id).parent_relation == "compression"
    assert [m.content for m in target.transcript(child.id)] == [m.content for m in source.transcript(child.id)]
