"""The query language: what a person types parses into terms, and nothing typed raises."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from sessiondb.query import MAX_TERMS, Term, has_cjk, like_pattern, parse
from sessiondb.store.sqlite.search import fts_string


def words(query):
    return [[t.text for t in group] for group in query.groups]


def test_words_must_all_match():
    q = parse("flaky upload test")
    assert words(q) == [["flaky"], ["upload"], ["test"]] and not q.excluded and not q.substring


def test_a_quoted_phrase_is_one_term():
    assert parse('"fushimi inari" dawn').groups[0] == (Term("fushimi inari", phrase=True),)


def test_or_joins_the_terms_beside_it():
    assert words(parse("kyoto OR osaka temples")) == [["kyoto", "osaka"], ["temples"]]


def test_minus_and_not_exclude():
    for text in ("kyoto -osaka", "kyoto NOT osaka"):
        q = parse(text)
        assert words(q) == [["kyoto"]] and q.excluded == (Term("osaka"),)
    assert parse('kyoto -"bad trip"').excluded == (Term("bad trip", phrase=True),)


def test_a_trailing_star_is_a_prefix():
    assert parse("compact*").groups == ((Term("compact", prefix=True),),)


def test_lone_operators_are_literal_words():
    assert words(parse("OR kyoto")) == [["OR"], ["kyoto"]]
    assert words(parse("kyoto NOT")) == [["kyoto"], ["NOT"]]
    assert words(parse("kyoto AND")) == [["kyoto"], ["AND"]]
    assert words(parse("kyoto and osaka")) == [["kyoto"], ["and"], ["osaka"]]  # lower case is a word


def test_an_unpaired_quote_and_parentheses_are_dropped():
    assert words(parse('(kyoto "osaka')) == [["kyoto"], ["osaka"]]


def test_only_exclusions_search_for_the_excluded_words():
    assert words(parse("-kyoto")) == [["kyoto"]] and not parse("-kyoto").excluded


def test_punctuation_alone_and_empty_queries_find_nothing():
    for text in ("", "   ", "*", "-", '""', "( ) ( )", "- * OR"[:3]):
        assert parse(text).empty, text


def test_cjk_text_switches_to_substrings():
    assert has_cjk("明日の東京") and has_cjk("서울에서") and not has_cjk("Tōkyō café")
    q = parse("東京 weather*")
    assert q.substring and words(q) == [["東京"], ["weather*"]]  # * is literal in substring mode


def test_terms_are_bounded():
    q = parse(" ".join(f"w{i}" for i in range(500)))
    assert sum(len(g) for g in q.groups) == MAX_TERMS


def test_fts_strings_and_like_patterns_escape_everything():
    assert fts_string('say "hi"') == '"say ""hi"""'
    assert like_pattern("100%_a\\b") == "%100\\%\\_a\\\\b%"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('ab "()*-:^+東京 ORNOTAND\\%_\'\x00é')), max_size=40))
def test_any_text_parses(text):
    q = parse(text)
    for group in q.groups:
        assert group and all(t.text for t in group)
