"""One rule for what the store holds: whatever append accepts, export writes and import
takes back unchanged; what append refuses (hostile ids, unbounded times and counts,
oversized messages), import refuses too, naming the limit, and nothing is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessiondb
from sessiondb import InvalidInput, MessageLimits
from sessiondb.model import MAX_COUNT, MAX_TIMESTAMP

CLI = [sys.executable, "-c", "from sessiondb.cli import main; main()"]

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)  # NUL and controls included
labels = st.none() | st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=20)
json_values = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | text,
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
                           max_leaves=6)
parts = st.lists(text | st.fixed_dictionaries({"type": st.just("text"), "text": text}) | json_values, max_size=5)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.none() | text | parts},
    optional={
        "uid": st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=20),
        "reasoning": st.none() | text,
        "tool_calls": st.none() | st.lists(json_values, max_size=2),
        "tool_call_id": labels, "tool_name": labels, "finish_reason": labels, "display_kind": labels,
        "token_count": st.none() | st.integers(0, MAX_COUNT),
        "timestamp": st.none() | st.floats(0, MAX_TIMESTAMP),
        "state": st.sampled_from(["active", "compacted", "rewound"]),
    })


def stored(store) -> list:
    """Everything export says of a store, but the export's own time and the ids the store assigns."""
    records = []
    for record in store.export():
        record = dict(record)
        if record["type"] == "header":
            continue
        if record["type"] == "message":
            record["message"] = {k: v for k, v in record["message"].items() if k != "id"}
        records.append(record)
    return records


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(messages, min_size=1, max_size=4, unique_by=lambda m: m.get("uid", object())))
def test_any_accepted_append_exported_and_imported_into_an_empty_store_is_identical(batch):
    with tempfile.TemporaryDirectory() as home:
        with sessiondb.open_store(home=home, profile="a") as source:
            session = source.create_session("cli")
            try:
                source.append(session.id, batch)
            except InvalidInput:
                return  # refused: nothing to carry over
            lines = [json.dumps(r) for r in source.export()]
            expected = stored(source)
        with sessiondb.open_store(home=home, profile="b") as target:
            target.import_records(lines)
            assert stored(target) == expected


def test_content_with_a_nul_byte_round_trips_through_the_cli(tmp_path):
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        s = store.create_session("cli")
        store.append(s.id, [{"uid": "nul", "role": "tool", "content": "before\x00after", "reasoning": "r\x00"}])
    env = {**os.environ, "SESSIONDB_UNDER_TEST": "1"}
    out = tmp_path / "all.jsonl"
    subprocess.run(CLI + ["--home", str(home), "sessions", "export", "-o", str(out)], check=True, env=env)
    done = subprocess.run(CLI + ["--home", str(tmp_path / "other"), "sessions", "import", str(out)],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    with sessiondb.open_store(home=tmp_path / "other") as other:
        [m] = other.transcript(s.id)
        assert (m.content, m.reasoning) == ("before\x00after", "r\x00")


@pytest.mark.parametrize("session_id", ["  ", "", "a/b", "..", "a\\b", "tab\there", "nl\n", " lead", "bidi\u202e",
                                        "x" * 201])
def test_a_hostile_session_id_is_refused_at_create_and_at_import(tmp_path, session_id):
    with sessiondb.open_store(home=tmp_path) as store:
        with pytest.raises(InvalidInput, match="session"):
            store.create_session("cli", session_id=session_id)
        good = store.create_session("cli", session_id="fine-東京")
        lines = [json.loads(line) for line in map(json.dumps, store.export())]
        lines[1]["session"]["id"] = session_id
        for record in lines[2:]:
            record.get("message", {}).pop("session_id", None)
            if record["type"] == "end":
                record["session_id"] = session_id
        with sessiondb.open_store(home=tmp_path, profile="other") as other:
            with pytest.raises(InvalidInput, match="line 2: the session's 'id'"):
                other.import_records(json.dumps(r) for r in lines)
            assert other.list_sessions().items == []
        assert [s.id for s in store.list_sessions().items] == [good.id]


@pytest.mark.parametrize("field, value, limit", [
    ("timestamp", 1e308, "year 9999"), ("timestamp", -1.0, "year 9999"),
    ("token_count", 10**26, f"{MAX_COUNT:,}"),
])
def test_huge_times_and_counts_are_refused_on_append_and_import(tmp_path, field, value, limit):
    with sessiondb.open_store(home=tmp_path) as store:
        s = store.create_session("cli")
        with pytest.raises(InvalidInput, match=limit):
            store.append(s.id, {"role": "user", "content": "x", field: value})
        store.append(s.id, {"uid": "m", "role": "user", "content": "x"})
        lines = [json.loads(json.dumps(r)) for r in store.export()]
        lines[2]["message"][field] = value
        with sessiondb.open_store(home=tmp_path, profile="other") as other:
            with pytest.raises(InvalidInput, match=limit):
                other.import_records(json.dumps(r) for r in lines)
            assert other.list_sessions().items == []
        with pytest.raises(InvalidInput, match=f"{MAX_COUNT:,}"):
            store.record_usage(s.id, model="m", input_tokens=10**26)


def test_the_message_limits_hold_for_append_and_import_alike(tmp_path):
    limits = MessageLimits(max_content_bytes=100, max_parts=3)
    with sessiondb.open_store(home=tmp_path) as roomy:
        s = roomy.create_session("cli")
        roomy.append(s.id, [{"uid": "long", "role": "user", "content": "é" * 60},
                            {"uid": "parted", "role": "user", "content": ["a", "b", "c", "d"]}])
        lines = [json.dumps(r) for r in roomy.export()]
    with sessiondb.open_store(home=tmp_path, profile="tight", limits=limits) as tight:
        t = tight.create_session("cli")
        with pytest.raises(InvalidInput, match="120 bytes; the limit is 100 bytes"):
            tight.append(t.id, {"role": "user", "content": "é" * 60})
        with pytest.raises(InvalidInput, match="4 parts; the limit is 3 parts"):
            tight.append(t.id, {"role": "user", "content": ["a", "b", "c", "d"]})
        with pytest.raises(InvalidInput, match="line 3: the message: content is 120 bytes"):
            tight.import_records(lines)
        assert tight.transcript(t.id) == [] and [x.id for x in tight.list_sessions().items] == [t.id]
    with pytest.raises(InvalidInput, match="max_parts must be a positive integer"):
        MessageLimits(max_parts=0)


def test_a_many_parted_message_is_searched_by_text_derived_in_one_pass(tmp_path):
    parts = [{"type": "text", "text": f"word{i}"} for i in range(10_000)]
    with sessiondb.open_store(home=tmp_path) as store:
        s = store.create_session("cli")
        store.append(s.id, {"uid": "many", "role": "user", "content": parts})
        [hit] = store.search("word9999")
        assert hit.uid == "many"
    import apsw  # the column the index reads holds the derived text, so SQL never walks the JSON

    conn = apsw.Connection(str(tmp_path / "state.db"), flags=apsw.SQLITE_OPEN_READONLY)
    [(content,)] = conn.execute("SELECT content FROM messages WHERE uid = 'many'")
    conn.close()
    assert content == "\n".join(f"word{i}" for i in range(10_000))
