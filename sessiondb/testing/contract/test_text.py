"""Any Python text a message holds comes back exactly, on every backend: NUL, half a
character (an unpaired surrogate, from a string cut inside an emoji or JSON's "\\ud83d"),
and the character and spellings the stores escape them with (sessiondb/store/sql.py)."""

from __future__ import annotations

import json

import pytest

from sessiondb import exports

TRICKY = [
    "half an emoji \ud83d after",
    "\udc00\ud800 two halves the wrong way round",
    "\ud83d\ude00 a whole emoji, written as its two halves",
    "nul\x00inside",
    "\ufffe alone, \ufffe\ufffe doubled, \ufffe0 before a zero",
    "the escape's own spelling: \ufffeud83d\ufffe and \ufffeu0041\ufffe",
    "plain",
]


def written(i, text):
    return [
        {"uid": f"c{i}", "role": "user", "content": text, "reasoning": text},
        {"uid": f"p{i}", "role": "assistant", "content": [{"type": "text", "text": text}, text]},
        {"uid": f"t{i}", "role": "assistant", "content": None,
         "tool_calls": [{"id": f"call-{i}", "type": "function", "function": {"name": "f", "arguments": text}}]},
    ]


@pytest.fixture
def stored(store):
    session = store.create_session("cli", session_id="text")
    sent = [m for i, text in enumerate(TRICKY) for m in written(i, text)]
    return session.id, sent, store.append(session.id, sent)


def fields(m):
    return m.uid, m.content, m.reasoning, m.tool_calls


def expected(sent):
    return [(m["uid"], m["content"], m.get("reasoning"), m.get("tool_calls")) for m in sent]


def test_every_text_reads_back_exactly_as_it_was_appended(store, stored, open_backend):
    sid, sent, appended = stored
    assert [fields(m) for m in appended] == expected(sent)
    assert [fields(m) for m in store.transcript(sid)] == expected(sent)
    store.close()
    assert [fields(m) for m in open_backend().transcript(sid)] == expected(sent)


def test_the_same_messages_again_store_nothing(store, stored):
    sid, sent, appended = stored
    assert store.append(sid, sent) == appended
    assert store.get_session(sid).message_count == len(sent)


def test_the_words_beside_half_a_character_are_found(store, stored):
    found = {h.uid: h.snippet for h in store.search("emoji", limit=100)}
    assert set(found) == {"c0", "p0", "c2", "p2"}
    assert found["c0"] == "half an <mark>emoji</mark> \ud83d after"
    assert {h.uid for h in store.search("after")} == {"c0", "p0"}
    assert {h.uid for h in store.search("halves", limit=100)} == {"c1", "p1", "c2", "p2"}


def test_the_export_as_json_lines_imports_back_equal(store, stored, open_backend):
    sid, sent, _ = stored
    lines = list(exports.jsonl(store.export([sid])))
    assert all(line.encode("utf-8") for line in lines)  # JSON text in UTF-8: half a character as \udXXX
    target = open_backend("target")
    report = target.import_records(lines)
    assert report.messages_imported == len(sent)
    # Exactly, but for one thing JSON itself cannot say: a high half followed by a low half
    # is read by every JSON parser as the whole character the two make (as json.loads does).
    assert [fields(m) for m in target.transcript(sid)] == [tuple(m) for m in json.loads(json.dumps(expected(sent)))]
