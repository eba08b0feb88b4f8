"""resume reads its own narrow rows (store/lineage.py's live_model_messages), not the full stored messages: each
of its dicts must still be exactly what the stored message, as `transcript` returns it,
gives a model by the contract's rules, for every shape a message can take, on every
backend."""

from __future__ import annotations

import json

from sessiondb.model import ModelMessage

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "."}'}}
SHAPES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "plain text, ünïcödé, 東京"},
    {"role": "user", "content": ""},
    {"role": "user", "content": "[background task finished]", "display_kind": "internal_notification"},
    {"role": "assistant", "content": "a status line", "display_kind": "internal_notification"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "assistant", "content": "calling two", "tool_calls": [CALL, {**CALL, "id": "c2"}]},
    {"role": "tool", "content": "a.py b.py", "tool_call_id": "c1", "tool_name": "ls"},
    {"role": "tool", "content": [{"type": "text", "text": "listing"}, {"type": "image_url", "image_url":
                                                                    {"url": "data:,x"}}], "tool_call_id": "c2"},
    {"role": "tool", "content": "orphan result"},
    {"role": "assistant", "content": "named but not a tool", "tool_name": "ls"},
    {"role": "assistant", "content": "two files", "reasoning": "counted them"},
    {"role": "assistant", "content": None, "reasoning": "", "tool_calls": []},
    {"role": "user", "content": [{"type": "text", "text": "look at this"}, {"type": "text", "text": "and this"}]},
    {"role": "user", "content": "NUL \x00 and \ufffe0 kept as given", "reasoning": "\x00\ufffe\ufffe"},
    {"role": "assistant", "content": "finished", "finish_reason": "stop", "token_count": 12, "timestamp": 5.0},
]


def as_model(m):
    """A stored message as resume has always shaped it: the contract's rules (S-09), in order."""
    out = {"role": "user" if m.display_kind == "internal_notification" else m.role, "content": m.content}
    if m.tool_calls is not None:
        out["tool_calls"] = m.tool_calls
    if m.tool_call_id is not None:
        out["tool_call_id"] = m.tool_call_id
    if m.tool_name is not None and m.role == "tool":
        out["name"] = m.tool_name
    if m.reasoning is not None:
        out["reasoning"] = m.reasoning
    return out


def test_resume_gives_every_shape_of_message_exactly_as_the_stored_message_does(store):
    s = store.create_session("cli")
    store.append(s.id, SHAPES)
    stored = store.transcript(s.id)
    resumed = store.resume(s.id)
    assert len(resumed) == len(stored) == len(SHAPES)
    for got, m in zip(resumed, stored):
        assert type(got) is ModelMessage and got.uid == m.uid
        # json.dumps keeps the keys' order: what a provider is sent is byte for byte the same.
        assert json.dumps(got) == json.dumps(as_model(m)), m


def test_resume_reads_only_the_live_rows_of_the_tip(store):
    s = store.create_session("cli")
    store.append(s.id, SHAPES[:4])
    kept = store.transcript(s.id)[1].id
    store.rewind(s.id, kept)
    store.append(s.id, SHAPES[4:8])
    lease = store.begin_compaction(s.id)
    tip = store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate")
    store.append(tip.id, SHAPES[8:])
    stored = store.transcript(tip.id)
    assert [json.dumps(m) for m in store.resume(s.id)] == [json.dumps(as_model(m)) for m in stored]
    assert [m.uid for m in store.resume(s.id)] == [m.uid for m in stored]
