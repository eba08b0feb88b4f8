"""cjk_runs finds exactly the maximal runs of characters of scripts written without spaces."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from sessiondb.query import cjk_runs, has_cjk

MIXED = st.text(st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),  # ASCII
    st.characters(min_codepoint=0xA0, max_codepoint=0x2FFF),  # Latin to the first CJK blocks
    st.characters(min_codepoint=0x3000, max_codepoint=0xFFFF, exclude_categories=("Cs",)),
    st.characters(min_codepoint=0x20000, max_codepoint=0x323AF),
), max_size=60)


@given(MIXED)
def test_the_runs_are_the_maximal_runs_of_cjk_characters_in_order(text):
    expected = ["".join(run) for cjk, run in itertools.groupby(text, key=has_cjk) if cjk]
    assert cjk_runs(text) == expected


def test_text_without_cjk_has_no_runs():
    assert cjk_runs("") == cjk_runs("plain ascii") == cjk_runs("café Ünïcode") == []
    assert cjk_runs("東京 and 天気予報, 한국어") == ["東京", "天気予報", "한국어"]
