"""Every field a message or a session carries has a bound (MessageLimits), refused with
InvalidInput naming the field and the limit before anything is written; a listing never
carries a session's metadata whole past a few KiB."""

from __future__ import annotations

import pytest

from sessiondb import InvalidInput, MessageLimits
from sessiondb.store.listing import LISTED_METADATA_BYTES, METADATA_CUT

SMALL = MessageLimits(max_content_bytes=1000, max_parts=5, max_reasoning_bytes=100, max_tool_calls=3,
                      max_tool_calls_bytes=400, max_message_bytes=1200, max_metadata_bytes=600,
                      max_metadata_value_bytes=300)


@pytest.fixture
def small(open_backend):
    return open_backend(limits=SMALL)


def call(number, arguments="{}", **fields):
    return {"id": f"call_{number}", "type": "function", "function": {"name": "grep", "arguments": arguments}, **fields}


PAST_A_LIMIT = {
    "reasoning": ({"role": "assistant", "content": "ok", "reasoning": "r" * 101}, "reasoning is 101 bytes.*max_reasoning_bytes"),
    "tool calls": ({"role": "assistant", "content": None, "tool_calls": [call(n) for n in range(4)]},
                   "tool_calls has 4 calls.*max_tool_calls\\)"),
    "tool arguments": ({"role": "assistant", "content": None, "tool_calls": [call(0, "a" * 400)]},
                       "tool_calls is .* bytes as JSON.*max_tool_calls_bytes"),
    "tool call id": ({"role": "assistant", "content": None, "tool_calls": [call(0, id="i" * 201)]},
                     "tool call 0: its id is 201 characters; the limit is 200"),
    "tool call name": ({"role": "assistant", "content": None,
                        "tool_calls": [{"id": "c", "function": {"name": "n" * 201, "arguments": "{}"}}]},
                       "tool call 0: its function name is 201 characters"),
    "tool_name": ({"role": "tool", "content": "out", "tool_call_id": "c", "tool_name": "n" * 201}, "tool_name must be at most 200"),
    "tool_call_id": ({"role": "tool", "content": "out", "tool_call_id": "c" * 201}, "tool_call_id must be at most 200"),
    "name": ({"role": "tool", "content": "out", "tool_call_id": "c", "name": "n" * 201}, "tool_name must be at most 200"),
    "whole message": ({"role": "assistant", "content": "c" * 900, "reasoning": "r" * 90, "tool_calls": [call(0, "a" * 250)]},
                      "content, reasoning and tool calls are .* bytes together.*max_message_bytes"),
}


@pytest.mark.parametrize("field", PAST_A_LIMIT)
def test_a_message_past_any_field_s_limit_is_refused_naming_it_and_nothing_of_its_batch_is_stored(small, field):
    message, refusal = PAST_A_LIMIT[field]
    s = small.create_session("cli")
    with pytest.raises(InvalidInput, match=f"message 1: {refusal}"):
        small.append(s.id, [{"role": "user", "content": "kept only if the batch is"}, message])
    assert small.transcript(s.id) == [] and small.get_session(s.id).message_count == 0


def test_a_message_at_every_limit_is_stored(small):
    s = small.create_session("cli")
    (stored,) = small.append(s.id, [{"role": "assistant", "content": "c" * 700, "reasoning": "r" * 100,
                                     "tool_calls": [call(n) for n in range(3)]}])
    assert len(stored.tool_calls) == 3 and stored.reasoning == "r" * 100


def test_the_default_limits_bound_reasoning_and_tool_calls(store):
    s = store.create_session("cli")
    defaults = MessageLimits()
    with pytest.raises(InvalidInput, match="max_reasoning_bytes"):
        store.append(s.id, {"role": "assistant", "content": "ok", "reasoning": "r" * (defaults.max_reasoning_bytes + 1)})
    with pytest.raises(InvalidInput, match="max_tool_calls\\)"):
        store.append(s.id, {"role": "assistant", "content": None,
                            "tool_calls": [call(n) for n in range(defaults.max_tool_calls + 1)]})
    assert store.transcript(s.id) == []


def test_session_metadata_is_bounded_per_value_and_in_total_on_create_and_on_every_patch(small):
    with pytest.raises(InvalidInput, match="metadata 'notes' is .* bytes as JSON; the limit is 300 .*max_metadata_value_bytes"):
        small.create_session("cli", metadata={"project": "/p", "notes": "n" * 300})
    with pytest.raises(InvalidInput, match="metadata is .* bytes as JSON; the limit is 600 .*max_metadata_bytes"):
        small.create_session("cli", metadata={f"k{n}": "v" * 200 for n in range(3)})
    s = small.create_session("cli", metadata={"a": "v" * 250, "b": "v" * 250})
    with pytest.raises(InvalidInput, match="patch 'c' is .*max_metadata_value_bytes"):
        small.update_metadata(s.id, {"c": "v" * 300})
    with pytest.raises(InvalidInput, match="metadata with this patch is .*the limit is 600"):
        small.update_metadata(s.id, {"c": "v" * 250})
    assert small.get_session(s.id).metadata == {"a": "v" * 250, "b": "v" * 250}
    assert small.update_metadata(s.id, {"a": None, "c": "v" * 250}).metadata == {"b": "v" * 250, "c": "v" * 250}


def test_a_listing_cuts_a_large_metadata_with_a_marker_and_get_session_reads_it_whole(store):
    whole = {"project": "/home/ana/app", "notes": "n" * 20_000, "plan": ["step"] * 2_000}
    big = store.create_session("cli", metadata=whole)
    small = store.create_session("cli", metadata={"project": "/home/ana/site"})
    listed = {s.id: s.metadata for s in store.list_sessions().items}
    assert listed[small.id] == {"project": "/home/ana/site"}
    cut = listed[big.id]
    assert cut["project"] == "/home/ana/app" and sorted(cut[METADATA_CUT]["keys"]) == ["notes", "plan"]
    assert "get the session" in cut[METADATA_CUT]["read"] and cut[METADATA_CUT]["bytes"] > 20_000
    assert len(repr(cut)) <= LISTED_METADATA_BYTES
    assert store.get_session(big.id).metadata == whole


def test_a_listing_of_metadata_with_many_long_keys_stays_within_its_bound(store):
    whole = {f"{n:03d}" + "k" * 2_000: n for n in range(100)}
    s = store.create_session("cli", metadata=whole)
    (listed,) = store.list_sessions().items
    marker = listed.metadata[METADATA_CUT]
    assert len(marker["keys"]) == 17 and marker["keys"][-1] == "... 84 more" and len(repr(listed.metadata)) <= LISTED_METADATA_BYTES
    assert store.get_session(s.id).metadata == whole


@pytest.mark.parametrize("options, refusal", [
    ({"durability": "fast"}, "durability must be 'full' or 'normal', not 'fast'"),
    ({"patience": -1}, "patience must be a non-negative number of seconds"),
    ({"patience": True}, "patience must be a non-negative number of seconds"),
    ({"patience": "10"}, "patience must be a non-negative number of seconds"),
])
def test_an_option_every_backend_takes_is_refused_the_same_way_on_each(open_backend, options, refusal):
    with pytest.raises(InvalidInput, match=refusal):
        open_backend(**options)
