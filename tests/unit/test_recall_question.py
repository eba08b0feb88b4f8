"""What a question recalls (sessiondb.recall.question): content words, CJK trigrams, the
time it names; the same for every backend, and never an error."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from sessiondb.query import MAX_TERMS
from sessiondb.recall import COMMON_MESSAGES, DATE_AFTER, MAX_RECALL_TRIGRAMS, question, rarer


def at(*day: int) -> float:
    return datetime(*day, tzinfo=timezone.utc).timestamp()


def test_stop_words_go_and_content_words_stay_once_folded():
    assert question("How about the ADK? And the Café, the café!").words == ("adk", "cafe")


def test_a_question_of_stop_words_only_keeps_them():
    assert question("Who was it?").words == ("who", "was", "it")


def test_cjk_text_is_cut_into_trigrams_and_latin_words_inside_it_are_words():
    asked = question("私はPythonを使う")
    assert asked.words == ("python",) and asked.trigrams == ("私は", "を使う")
    assert question("明日の天気").trigrams == ("明日の", "日の天", "の天気")


@pytest.mark.parametrize("text, when", [
    ("What happened on May 3, 2023?", (at(2023, 5, 3), at(2023, 5, 4) + DATE_AFTER)),
    ("What happened on 3 May 2023?", (at(2023, 5, 3), at(2023, 5, 4) + DATE_AFTER)),
    ("What happened in December 2023?", (at(2023, 12, 1), at(2024, 1, 1) + DATE_AFTER)),
    ("What happened during 2022?", (at(2022, 1, 1), at(2023, 1, 1) + DATE_AFTER)),
    ("What happened on 31 June 2023?", None),  # no such day
    ("May I ask about 2023?", None),
    ("東京でin 2023に何をした?", (at(2023, 1, 1), at(2024, 1, 1) + DATE_AFTER)),  # read apart from the CJK text
])
def test_the_time_a_question_names(text, when):
    assert question(text).when == when


@pytest.mark.parametrize("text", ["", "\x00", "\ud800?", "in 0000", "December 9999", "word " * 10_000, "明" * 10_000])
def test_any_text_is_a_question_and_its_terms_are_bounded(text):
    asked = question(text)
    assert len(asked.words) <= MAX_TERMS and len(asked.trigrams) <= MAX_RECALL_TRIGRAMS


def test_a_common_word_only_adds_to_the_matches_of_the_rarer_ones():
    counts = {"john": 60_000, "kayak": 40, "trip": 3_000}
    assert rarer(counts, 200_000) == (["kayak", "trip"], ["john"])
    assert rarer(counts, 4_000_000) == (["john", "kayak", "trip"], [])  # under COMMON_SHARE of a larger memory
    assert rarer({"john": COMMON_MESSAGES, "kayak": 1}, 100) == (["john", "kayak"], [])  # a small memory: every word


def test_in_a_question_of_common_words_the_rarest_makes_the_matches():
    assert rarer({"john": 60_000, "said": 80_000, "get": 70_000}, 200_000) == (["john"], ["said", "get"])
