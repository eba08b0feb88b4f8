"""The memory backend's own promises: a named store is shared by every handle of the
process, a read holds one snapshot, and search finds by scanning what the engines'
indexes would find (the Rows contract itself is sessiondb/testing/contract/test_rows.py)."""

from __future__ import annotations

import threading

import pytest

import sessiondb
from sessiondb.query import parse
from sessiondb.recall import question
from sessiondb.store import commands as cmd
from sessiondb.store.memory import MemoryBackend, forget


def _session(sid: str, **columns):
    return {"id": sid, "source": "cli", "started_at": 1.0, **columns}


def _message(sid: str, uid: str, content: str, *, role: str = "user", timestamp: float = 2.0, **columns):
    return {"session_id": sid, "uid": uid, "seq": 1, "role": role, "content": content,
            "timestamp": timestamp, **columns}


def test_handles_of_one_name_share_the_store_and_an_anonymous_one_is_its_own():
    first = sessiondb.open_store("memory://shared-by-name")
    first.backend.write(lambda rows: rows.insert("sessions", [_session("s1")]))
    first.close()
    again = sessiondb.open_store("memory://shared-by-name")
    assert [r["id"] for r in again.backend.read(lambda rows: rows.select("sessions"))] == ["s1"]
    other_profile = sessiondb.open_store("memory://shared-by-name", profile="work")
    assert other_profile.backend.read(lambda rows: rows.select("sessions")) == []
    anonymous = MemoryBackend()
    assert anonymous.read(lambda rows: rows.select("sessions")) == []
    forget("memory://shared-by-name")
    assert MemoryBackend("shared-by-name").read(lambda rows: rows.select("sessions")) == []


def test_a_read_keeps_its_snapshot_while_a_write_commits():
    store = MemoryBackend()
    store.write(lambda rows: rows.insert("sessions", [_session("s1")]))
    reading, written = threading.Event(), threading.Event()

    def read(rows):
        before = rows.count("sessions")
        reading.set()
        written.wait()
        return before, rows.count("sessions"), [r["id"] for r in rows.select("sessions")]

    seen = []
    reader = threading.Thread(target=lambda: seen.append(store.read(read)))
    reader.start()
    reading.wait()
    store.write(lambda rows: rows.insert("sessions", [_session("s2")]))
    written.set()
    reader.join()
    assert seen == [({None: {"count": 1}}, {None: {"count": 1}}, ["s1"])]
    assert store.read(lambda rows: rows.count("sessions")) == {None: {"count": 2}}


def test_a_read_transaction_writes_nothing():
    with pytest.raises(sessiondb.InvalidInput):
        MemoryBackend().read(lambda rows: rows.insert("sessions", [_session("s1")]))


def _search(store, text: str, *, substring: bool = False, **filters):
    query = {"profile": None, "source": None, "user_id": None, "session_ids": None, "role": None, "since": None,
             "until": None, "include_tools": False, "include_reasoning": False, "limit": 10, **filters}
    return [(hit.uid, hit.snippet) for hit in store.search(cmd.Search(parse(text, substring=substring), **query))]


@pytest.fixture
def searched():
    store = MemoryBackend()

    def fill(rows):
        rows.insert("sessions", [_session("s1", title="Trip"), _session("s2", source="api")])
        rows.insert("messages", [
            _message("s1", "a", "The café opens at nine", timestamp=1.0),
            _message("s1", "b", "Coffee and cafes, coffee again", timestamp=2.0),
            _message("s1", "c", "tool output: cafe", role="tool", timestamp=3.0),
            _message("s2", "d", "a rewound cafe", state="rewound", timestamp=4.0),
            _message("s2", "e", "cafeteria plans", timestamp=5.0),
            _message("s2", "f", "東京の天気", timestamp=6.0),
        ])

    store.write(fill)
    return store


def test_search_matches_words_folded_phrases_prefixes_and_exclusions(searched):
    assert [uid for uid, _ in _search(searched, "cafe")] == ["a"]  # not the tool's, not the rewound one
    assert [uid for uid, _ in _search(searched, "cafe", include_tools=True)] == ["c", "a"]
    assert sorted(uid for uid, _ in _search(searched, "caf*")) == ["a", "b", "e"]
    assert [uid for uid, _ in _search(searched, "coffee")] == ["b"]
    assert [uid for uid, _ in _search(searched, '"opens at"')] == ["a"]
    assert [uid for uid, _ in _search(searched, '"at opens"')] == []
    assert [uid for uid, _ in _search(searched, "caf* -coffee")] == ["e", "a"]  # as often: the newest first
    assert [uid for uid, _ in _search(searched, "coffee OR cafeteria")] == ["b", "e"]
    assert _search(searched, "cafe")[0][1] == "The <mark>café</mark> opens at nine"


def test_search_ranks_more_occurrences_first_then_newest(searched):
    def fill(rows):
        rows.insert("messages", [_message("s2", "g", "coffee", timestamp=7.0)])

    searched.write(fill)
    assert [uid for uid, _ in _search(searched, "coffee")] == ["b", "g"]


def test_search_filters_and_substrings(searched):
    assert [uid for uid, _ in _search(searched, "caf*", source="api")] == ["e"]
    assert [uid for uid, _ in _search(searched, "caf*", session_ids=("s1",), since=1.5)] == ["b"]
    assert [uid for uid, _ in _search(searched, "caf*", until=2.0)] == ["a"]
    assert [uid for uid, _ in _search(searched, "caf*", limit=1)] == ["e"]
    assert [uid for uid, _ in _search(searched, "京の")] == ["f"]
    assert [uid for uid, _ in _search(searched, "afe", substring=True)] == ["e", "b", "a"]


def test_recall_finds_any_content_word_stemmed_rarer_words_first(searched):
    def ask(text: str):
        filters = {"profile": None, "source": None, "user_id": None, "session_ids": None, "role": None, "since": None,
                   "until": None, "include_tools": False, "include_reasoning": False, "limit": 10}
        return [hit.uid for hit in searched.recall(cmd.Search(question(text), **filters))]

    assert ask("When does the café open?") == ["a", "b"]  # "opens" is "open", "cafes" "cafe"; "when", "does" left out
    # plans: one message holds it, cafe (cafes) two, so e outranks a; b, the reply to a,
    # gains a share of a's score (and a a smaller one of b's)
    assert ask("What about cafe plans?") == ["b", "e", "a"]
    assert ask("Who was it?") == []
