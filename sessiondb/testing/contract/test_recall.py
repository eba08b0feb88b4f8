"""Recall through the store, on every backend (S-54): a question in natural language finds the
messages that answer it, and every script is found the same way (one table of cases).
How it scores on LoCoMo: bench/recall.py."""

from __future__ import annotations

import unicodedata

import pytest

from sessiondb import InvalidInput
from sessiondb.recall import COMMON_MESSAGES


def uids(hits):
    return [h.uid for h in hits]


@pytest.fixture
def chat(store):
    s = store.create_session("telegram")
    store.append(s.id, [
        {"uid": "adk", "role": "user", "content": "The ADK is a great toolkit."},
        {"uid": "ask", "role": "user", "content": "Who will you invite to your gaming party?"},
        {"uid": "reply", "role": "assistant", "content": "Some old friends from the tournaments."},
        {"uid": "research", "role": "assistant", "content": "Caroline researched adoption agencies last week."},
        {"uid": "lunch", "role": "user", "content": "Lunch is at noon, as always."},
    ])
    return s


def test_a_question_finds_its_content_words_whichever_match(store, chat):
    assert uids(store.recall("How about ADK?")) == ["adk"]  # "how" and "about" are stop words
    assert uids(store.search("How about ADK?")) == []  # the query language needs every word


def test_words_match_by_their_stem(store, chat):
    assert uids(store.recall("What does Caroline research?"))[0] == "research"  # researched


def test_a_match_gains_from_the_match_before_it(store, chat):
    # "friends" alone matches the reply, and a shorter message of another session, which
    # bm25 alone ranks first; the reply follows the message holding the question's other
    # words, and gains a share of its score.
    elsewhere = store.create_session("cli")
    store.append(elsewhere.id, [{"uid": "pizza", "role": "user", "content": "My friends love pizza."}])
    hits = uids(store.recall("Which friends came to the gaming party?"))
    assert hits.index("reply") < hits.index("pizza")
    assert uids(store.recall("friends"))[0] == "pizza"  # bm25 alone


def test_a_question_that_matches_nothing_finds_nothing(store, chat):
    assert store.recall("Where is the zeppelin hangar?") == []
    assert store.recall("") == [] and store.recall("?!") == []


@pytest.mark.parametrize("question", [
    "x" * 50_000, "word " * 10_000, "\x00\x00", "\ud800 lone surrogate", "((( \" OR NOT -*", "明日" * 5000,
])
def test_any_question_is_taken(store, chat, question):
    assert isinstance(store.recall(question), list)


def test_a_question_must_be_text(store):
    with pytest.raises(InvalidInput):
        store.recall(b"bytes")  # type: ignore[arg-type]


def test_filters_apply(store, chat):
    other = store.create_session("cli")
    store.append(other.id, [{"uid": "adk2", "role": "user", "content": "ADK again"}])
    assert uids(store.recall("ADK?", source="cli")) == ["adk2"]
    assert uids(store.recall("ADK?", session_id=chat.id)) == ["adk"]


# --- every script is found: one table, every backend ---------------------------------------

def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


#: (stored text, what is asked, how: "search" or "recall").
SCRIPTS = [
    ("我用Python写代码", "Python", "search"),
    ("我用Python写代码", "Python", "recall"),
    ("私はPythonでADKを使っています", "ADK", "search"),
    ("私はPythonでADKを使っています", "Python", "recall"),
    (nfd("プログラミングが好きです"), "プログラミング", "search"),
    (nfd("プログラミングが好きです"), "プログラミング", "recall"),
    (nfd("민수입니다 반갑습니다"), "민수입니다", "search"),
    (nfd("민수입니다 반갑습니다"), "민수입니다", "recall"),
    (nfd("東京のCafé巡り"), "Café", "search"),
    (nfd("東京のCafé巡り"), "café", "recall"),
    ("before\x00trailing words", "trailing", "search"),
    ("before\x00trailing words", "trailing", "recall"),
    (nfd("Crème brûlée recipe"), "brûlée", "search"),
    (nfd("Crème brûlée recipe"), "brulee", "recall"),
    ("Привет, как дела", "привет", "search"),
    ("Привет, как дела", "Привет", "recall"),
    ("私の名前は太郎です", "太郎", "search"),  # a run shorter than a trigram: found by a scan
    ("私の名前は太郎です", "太郎", "recall"),
    ("Las canciones de Shakira", "¿Qué canciones?", "recall"),  # another language: the same word
    ("Die Häuser am See", "Welche Häuser?", "recall"),
]


@pytest.mark.parametrize("stored, asked, how", SCRIPTS, ids=[f"{how}:{asked}" for _, asked, how in SCRIPTS])
def test_every_script_is_found(store, stored, asked, how):
    s = store.create_session("cli")
    store.append(s.id, [{"uid": "it", "role": "user", "content": stored},
                        {"uid": "noise", "role": "user", "content": "nothing to see here"}])
    assert uids(getattr(store, how)(asked)) == ["it"]


def test_compacted_messages_are_recalled_and_marked_rewound_and_deleted_ones_never(store):
    s = store.create_session("cli")
    _, second, _ = store.append(s.id, [
        {"uid": "old", "role": "user", "content": "The zanzibar ferry leaves at dawn."},
        {"uid": "kept", "role": "user", "content": "Book the zanzibar hotel."},
        {"uid": "undone", "role": "user", "content": "Cancel the zanzibar trip."},
    ])
    store.rewind(s.id, second.id)  # the messages after it: "undone"
    lease = store.begin_compaction(s.id)
    live = store.commit_compaction(lease, [{"uid": "sum", "role": "assistant", "content": "a summary"}])
    hits = store.recall("When does the zanzibar ferry leave?")
    assert "undone" not in uids(hits)
    assert {h.uid: h.compacted for h in hits} == {"old": True, "kept": True}
    store.delete_session(live.id)  # the conversation, its compacted past included
    assert store.recall("When does the zanzibar ferry leave?") == []


def test_a_question_naming_a_time_favours_what_was_written_then(store):
    s = store.create_session("cli")
    may, august = 1_683_000_000.0, 1_691_000_000.0  # 2 May 2023, 2 August 2023
    store.append(s.id, [
        {"uid": "spring", "role": "user", "content": "We adopted a puppy from the shelter.", "timestamp": may},
        {"uid": "summer", "role": "user", "content": "We adopted a kitten.", "timestamp": august},
    ])
    assert uids(store.recall("What did they adopt?"))[0] == "summer"  # shorter: bm25 alone
    assert uids(store.recall("What did they adopt in May 2023?"))[0] == "spring"
    assert uids(store.recall("What did they adopt on 2 May, 2023?"))[0] == "spring"
    assert uids(store.recall("What did they adopt in 2021?"))[0] == "summer"


def test_in_a_large_memory_a_common_word_ranks_the_matches_of_the_rarer_ones(store):
    # "ann" is in every message, far more than COMMON_MESSAGES and COMMON_SHARE of them: the
    # question's rarer word finds the matches, and the common one still counts in their score.
    s = store.create_session("telegram")
    filler = [{"role": "user", "content": f"Ann: note {i}"} for i in range(COMMON_MESSAGES + 100)]
    for start in range(0, len(filler), 1000):
        store.append(s.id, filler[start:start + 1000])
    for uid, said in (("both", "Ann: a kayak trip with my brother"), ("rare", "Bob: a kayak trip with my brother")):
        store.append(store.create_session("cli").id, [{"uid": uid, "role": "user", "content": said}])
    # only the rarer words make matches: the common one does not bring in its thousands
    assert uids(store.recall("Did Ann go on a kayak trip?", limit=100)) == ["both", "rare"]
    assert len(store.recall("Ann", limit=5)) == 5  # a question of common words only still finds them


def test_matches_the_filters_leave_out_never_fill_the_ranking(store):
    # Two thousand and more tool outputs rank above the one user message (shorter, the word
    # twice): with tools left out (the default) the message is still found.
    s = store.create_session("telegram")
    for turn in range(5):
        calls = [f"c{turn}-{i}" for i in range(500)]
        store.append(s.id, [{"role": "assistant", "content": "", "tool_calls": [
            {"id": c, "type": "function", "function": {"name": "paddle", "arguments": "{}"}} for c in calls]}])
        store.append(s.id, [{"role": "tool", "tool_call_id": c, "content": "kayak kayak"} for c in calls])
    store.append(s.id, [{"uid": "mine", "role": "user", "content": "I would like to rent a kayak for the lake"}])
    assert uids(store.recall("kayak")) == ["mine"]
    assert len(store.recall("kayak", include_tools=True, limit=20)) == 20
