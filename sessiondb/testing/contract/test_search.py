"""Search through the store: words, phrases, OR, NOT, prefixes, CJK substrings, filters,
and the states and write paths the indexes must follow. How SQLite's indexes follow rows
its triggers see moved, and the migration that built them: tests/sqlite/test_search_index.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sessiondb import InvalidInput

TOOL_TEXT_LIMIT = 8192  # characters of a tool message's output that are searchable (the contract)


def check_indexes(store):
    """verify(): the search index holds exactly the searchable messages, with their text."""
    report = store.verify()
    assert report.ok and report.notes == [], report.problems + report.notes


def uids(hits):
    return [h.uid for h in hits]


@pytest.fixture
def kyoto(store):
    s = store.create_session("telegram", title="Trip to Kyoto")
    store.append(s.id, [
        {"uid": "plan", "role": "user", "content": "Plan three days in Kyoto, mostly temples and café food."},
        {"uid": "day1", "role": "assistant", "content": "Day 1: Fushimi Inari at dawn, then Nishiki Market."},
        {"uid": "swap", "role": "user", "content": "Swap day 2 for something quieter; Fushimi was crowded."},
        {"uid": "tokyo", "role": "user", "content": "明日の東京の天気は？"},
        {"uid": "tokyo2", "role": "assistant", "content": "明日の東京は晴れ、最高気温は18度です。"},
        {"uid": "price", "role": "assistant", "content": "The ryokan costs 100% more in spring_time."},
    ])
    return s


def test_every_word_must_match(store, kyoto):
    assert uids(store.search("kyoto temples")) == ["plan"]
    assert store.search("kyoto osaka") == []


def test_matching_folds_case_and_diacritics(store, kyoto):
    assert uids(store.search("CAFE")) == ["plan"]
    assert uids(store.search("café")) == ["plan"]


def test_a_quoted_phrase_matches_words_in_order(store, kyoto):
    assert uids(store.search('"fushimi inari"')) == ["day1"]
    assert store.search('"inari fushimi"') == []


def test_or_finds_either_word(store, kyoto):
    assert set(uids(store.search("temples OR quieter"))) == {"plan", "swap"}


def test_minus_and_not_exclude_a_word(store, kyoto):
    assert uids(store.search("fushimi -dawn")) == ["swap"]
    assert uids(store.search("fushimi NOT dawn")) == ["swap"]


def test_a_prefix_matches_word_beginnings(store, kyoto):
    assert set(uids(store.search("quiet*"))) == {"swap"}
    assert set(uids(store.search("fushi*"))) == {"day1", "swap"}


def test_hits_carry_a_highlighted_snippet_a_score_and_the_session(store, kyoto):
    [hit] = store.search("nishiki")
    assert "<mark>Nishiki</mark>" in hit.snippet
    assert hit.score > 0 and hit.role == "assistant" and hit.state == "active" and not hit.compacted
    assert (hit.session_id, hit.session_title, hit.session_source) == (kyoto.id, "Trip to Kyoto", "telegram")
    assert hit.message_id == store.transcript(kyoto.id)[1].id and hit.timestamp > 0


def test_cjk_substrings_are_found_through_the_trigram_index(store, kyoto):
    hits = store.search("東京の天")
    assert uids(hits) == ["tokyo"] and "<mark>" in hits[0].snippet


def test_a_cjk_term_shorter_than_a_trigram_is_matched_by_a_scan(store, kyoto):
    hits = store.search("東京")
    assert uids(hits) == ["tokyo2", "tokyo"]  # newest first
    assert hits[0].snippet.count("<mark>東京</mark>") == 1 and hits[0].score == 0.0
    assert uids(store.search("晴れ 東京")) == ["tokyo2"]


def test_like_wildcards_in_short_terms_are_literal(store, kyoto):
    assert uids(store.search("0%", substring=True)) == ["price"]
    assert store.search("y%", substring=True) == []  # % is not "anything"
    assert uids(store.search("g_", substring=True)) == ["price"]  # the "g_t" of spring_time
    assert store.search("s_q", substring=True) == []


def test_substring_mode_matches_inside_words(store, kyoto):
    assert set(uids(store.search("ushim", substring=True))) == {"day1", "swap"}
    assert store.search("ushim") == []


def test_substrings_fold_case_and_accents_alike_on_every_backend(store):
    store.append(store.create_session("cli").id, [
        {"uid": "fr", "role": "user", "content": "Rendez-vous à l'École, puis un CAFÉ crème."},
        {"uid": "de", "role": "user", "content": "Die Straße nach Øresund ist lang."},
        {"uid": "ru", "role": "user", "content": "Москва и ёлка зимой"},
        {"uid": "plain", "role": "user", "content": "plain ascii text about a cafe"},
    ])
    assert uids(store.search("ecole", substring=True)) == ["fr"]
    assert uids(store.search("ÉCOLE, PUIS", substring=True)) == ["fr"]
    assert uids(store.search("cafe cr", substring=True)) == ["fr"]
    assert uids(store.search("café", substring=True)) == ["plain", "fr"]  # newest first
    assert uids(store.search("strasse nach ore", substring=True)) == ["de"]
    assert uids(store.search("москва", substring=True)) == ["ru"]
    assert uids(store.search("ЕЛКА", substring=True)) == ["ru"]
    assert uids(store.search("cafe -CRÈME", substring=True)) == ["plain"]
    hit = store.search('"cafe crème"', substring=True)[0]
    assert "un <mark>CAFÉ crème</mark>." in hit.snippet  # the text as written, where its fold matched


MALFORMED = ['"', '"""', '((', ')', 'kyoto (', '"kyoto', 'OR', 'NOT', 'AND OR NOT', '-', '*', '-*', '**kyoto',
             'kyoto"', '(("fushimi" OR', '^kyoto', 'kyoto:', 'col:kyoto', 'NEAR(kyoto fushimi)', "'", '\\',
             '" OR "" AND (', 'kyoto NOT', '- - -', '"unbalanced OR -', '\x00', '東京"(', '{kyoto}', '+kyoto']


@pytest.mark.parametrize("query", MALFORMED)
def test_malformed_queries_never_raise(store, kyoto, query):
    store.search(query)
    store.search(query, substring=True)


def test_malformed_syntax_is_read_as_literal_words(store, kyoto):
    assert uids(store.search('((kyoto "temples')) == ["plan"]
    assert uids(store.search("kyoto: ^temples")) == ["plan"]  # FTS5 column filter and anchor: literal
    assert uids(store.search("(fushimi dawn)")) == ["day1"]
    assert store.search("NEAR(fushimi dawn)") == []  # NEAR is a word here, and no message says it


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=30))
def test_no_query_text_raises(store, kyoto, text):
    store.search(text)
    store.search(text, substring=True, include_tools=True)


def test_rewound_messages_are_never_found(store, kyoto):
    plan = store.transcript(kyoto.id)[0]
    assert store.rewind(kyoto.id, plan.id) == 5  # day1 and everything after it
    assert store.search("nishiki") == [] and store.search("Nishiki Market", substring=True) == []
    check_indexes(store)
    store.restore_rewound(kyoto.id)  # restored: found again
    assert uids(store.search("nishiki")) == ["day1"]
    store.append(kyoto.id, {"uid": "undone", "role": "user", "content": "zanzibar", "state": "rewound"})
    assert store.search("zanzibar") == []
    check_indexes(store)


def test_compacted_messages_are_found_and_marked(store):
    s = store.create_session("telegram")
    store.append(s.id, [{"uid": "plan", "role": "user", "content": "Plan three days of temples."},
                        {"uid": "tokyo", "role": "user", "content": "明日の東京の天気は？"}])
    lease = store.begin_compaction(s.id)  # archives these two...
    store.append(s.id, {"uid": "tokyo2", "role": "assistant", "content": "明日の東京は晴れ、最高気温は18度です。"})
    store.commit_compaction(lease, {"uid": "sum", "role": "system", "content": "a trip"})  # ...not this one
    [hit] = store.search("temples")
    assert hit.compacted and hit.state == "compacted" and hit.to_dict()["compacted"] is True
    assert [h.compacted for h in store.search("東京")] == [False, True]


def test_deleting_a_session_removes_its_messages_from_the_indexes(store, kyoto):
    store.delete_session(kyoto.id)
    assert store.search("kyoto") == [] and store.search("東京") == []
    check_indexes(store)


def test_text_parts_are_indexed(store):
    s = store.create_session("desktop")
    store.append(s.id, {"role": "user", "content": [
        {"type": "text", "text": "describe this harbour"}, {"type": "image_url", "image_url": "data:xyz"},
        "plain part", 7,
    ]})
    assert len(store.search("harbour")) == 1 and len(store.search('"plain part"')) == 1
    assert store.search("image_url") == [] and store.search("xyz") == []
    check_indexes(store)


def test_tool_output_is_searchable_up_to_its_first_8_kib(store):
    s = store.create_session("cli")
    output = "early marker " + "x " * (TOOL_TEXT_LIMIT // 2) + "late marker"
    store.append(s.id, {"role": "tool", "content": output, "tool_name": "shell"})
    assert store.search("early") == []  # tool output only when asked for
    assert len(store.search("early", include_tools=True)) == 1
    assert len(store.search("early", role="tool")) == 1
    assert store.search("late", include_tools=True) == []
    check_indexes(store)


def test_filters_narrow_the_hits(store, kyoto):
    other = store.create_session("cli", title="Other")
    store.append(other.id, {"uid": "o", "role": "user", "content": "kyoto again", "timestamp": 1000.0})
    assert uids(store.search("kyoto", source="cli")) == ["o"]
    assert uids(store.search("kyoto", session_id=kyoto.id)) == ["plan"]
    assert uids(store.search("kyoto", role="assistant")) == []
    assert uids(store.search("kyoto", until=2000.0)) == ["o"]
    assert uids(store.search("kyoto", since=2000.0)) == ["plan"]
    assert set(uids(store.search("kyoto", profile="main"))) == {"plan", "o"}
    assert store.search("kyoto", profile="work") == []
    assert len(store.search("kyoto OR fushimi OR quieter", limit=2)) == 2


def test_a_conversation_search_reads_every_session_compactions_rotated_it_into_and_only_those(store):
    root = store.create_session("cli")
    store.append(root.id, {"uid": "first", "role": "user", "content": "lantern festival plans"})
    lease = store.begin_compaction(root.id)
    tip = store.commit_compaction(lease, [{"role": "system", "content": "summary"}], mode="rotate").id
    store.append(tip, {"uid": "later", "role": "user", "content": "the lantern is booked"})
    branch = store.create_session("cli", parent_session_id=tip, parent_relation="branch")  # a conversation of its own
    store.append(branch.id, {"uid": "branched", "role": "user", "content": "a lantern elsewhere"})
    assert uids(store.search("lantern", session_id=root.id)) == ["first"]
    for named in (root.id, tip):  # whichever session of it is named
        assert set(uids(store.search("lantern", session_id=named, conversation=True))) == {"first", "later"}
        assert set(uids(store.recall("where is the lantern", session_id=named, conversation=True))) == {
            "first", "later"}
    assert store.search("lantern", session_id="never-stored", conversation=True) == []
    with pytest.raises(InvalidInput, match="name it with session_id"):
        store.search("lantern", conversation=True)
    with pytest.raises(InvalidInput, match="conversation must be true or false"):
        store.recall("lantern", session_id=root.id, conversation="yes")


def test_bad_arguments_are_refused(store):
    for bad in (dict(query=None), dict(query="x", limit=0), dict(query="x", role="robot"),
                dict(query="x", profile="Bad Name"), dict(query="x", include_tools="yes")):
        with pytest.raises(InvalidInput):
            store.search(**bad)


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_a_real_compaction_keeps_the_archive_searchable_and_the_indexes_true(store, kyoto, mode):
    lease = store.begin_compaction(kyoto.id)
    store.append(kyoto.id, {"uid": "late", "role": "user", "content": "a late zephyr arrives"})
    live = store.commit_compaction(lease, [{"uid": "sum", "role": "assistant", "content": "summary of the zanzibar"}],
                                   mode=mode)
    [archived] = store.search("nishiki")
    assert archived.compacted and archived.session_id == kyoto.id
    [late] = store.search("zephyr")
    assert not late.compacted and late.session_id == live.id
    assert [h.session_id for h in store.search("zanzibar")] == [live.id]
    check_indexes(store)


def test_cjk_substring_hits_are_ranked_by_how_often_and_how_densely_they_match(store):
    sid = store.create_session("cli").id
    store.append(sid, [
        {"uid": "once", "role": "user", "content": "長い文章の中で一度だけカラオケに触れて、ほかの話題がたくさん続いていく"},
        {"uid": "often", "role": "user", "content": "カラオケ、カラオケ、またカラオケ"},
        {"uid": "short", "role": "user", "content": "今夜カラオケ"},
    ])
    hits = store.search("ラオケ")
    assert uids(hits) == ["often", "short", "once"]  # not newest first: ranked
    assert hits[0].score > hits[1].score > hits[2].score > 0
    assert all("<mark>ラオケ</mark>" in h.snippet for h in hits)
    # A group with a term shorter than a trigram is a scan: newest first, unranked.
    assert [h.score for h in store.search("ラオ", substring=True)] == [0.0, 0.0, 0.0]


def test_substring_hits_in_text_with_spaces_are_a_scan_newest_first(store):
    sid = store.create_session("cli").id
    store.append(sid, [
        {"uid": "once", "role": "user", "content": "a long message that mentions karaoke once, among many other "
                                                   "words of no interest to anyone looking for it"},
        {"uid": "often", "role": "user", "content": "karaoke, karaoke and more KARAOKE"},
        {"uid": "short", "role": "user", "content": "karaoke tonight"},
    ])
    hits = store.search("araok", substring=True)
    assert uids(hits) == ["short", "often", "once"]  # newest first: no index ranks them
    assert [h.score for h in hits] == [0.0, 0.0, 0.0]
    assert all("<mark>araok</mark>" in h.snippet.lower() for h in hits)


@pytest.mark.parametrize("newer", [999, 1000])
def test_hits_are_ranked_among_the_newest_thousand_matches_on_every_backend(store, newer):
    """The most relevant match (the word three times) is the oldest: it leads the hits while
    it is among the newest 1,000 matches, and is not found once 1,000 newer ones follow it."""
    sid = store.create_session("cli").id
    store.append(sid, {"uid": "best", "role": "user", "content": "marmalade, marmalade and more marmalade"})
    store.append(sid, [{"uid": f"m{i}", "role": "user",
                        "content": f"marmalade on toast with butter, tea, jam and a long story number {i}"}
                       for i in range(newer)])
    best = uids(store.search("marmalade", limit=1000))
    assert ("best" in best, best[:1] == ["best"]) == ((True, True) if newer < 1000 else (False, False))
    assert len(best) == min(newer + 1, 1000)


# --- what a search costs is bounded whatever the stored text ----------------------------

_SNIPPET_FUNCTIONS = {  # the function each backend hands a hit's text to for its snippet
    "sqlite": ("sessiondb.store.sqlite.search", "snippets", lambda args: sum(map(len, args[2].values()))),
    "postgresql": ("sessiondb.store.postgres.search", "headlines", lambda args: sum(map(len, args[3]))),
}
_SNIPPET_FUNCTIONS["pgbouncer"] = _SNIPPET_FUNCTIONS["postgresql"]  # the same backend through a pooler


def _characters_snipped(store, backend, monkeypatch, query, **options):
    """How many characters the backend's snippet function is handed by one search."""
    if backend not in _SNIPPET_FUNCTIONS:
        pytest.skip(f"measures an engine's own snippet function; {backend} has none of these")
    module, name, measure = _SNIPPET_FUNCTIONS[backend]
    import importlib

    target = importlib.import_module(module)
    real, handed = getattr(target, name), []

    def counting(*args):
        handed.append(measure(args))
        return real(*args)

    monkeypatch.setattr(target, name, counting)
    hits = store.search(query, **options)
    monkeypatch.setattr(target, name, real)
    return hits, sum(handed)


def test_the_text_a_snippet_is_cut_from_does_not_grow_with_the_message(store, backend, monkeypatch):
    handed = []
    for n in (4_000, 8_000, 16_000):
        s = store.create_session("cli")
        store.append(s.id, [{"role": "user", "content": " ".join(["lorem"] * n)}])
        hits, characters = _characters_snipped(store, backend, monkeypatch, "lorem", session_id=s.id)
        assert len(hits) == 1 and "<mark>lorem</mark>" in hits[0].snippet
        handed.append(characters)
    assert handed[0] == handed[1] == handed[2] <= 2_048


def test_a_snippet_is_cut_around_a_match_far_into_a_long_message(store, backend, monkeypatch):
    s = store.create_session("cli")
    store.append(s.id, [{"role": "user", "content": "filler " * 5_000 + "the Pelican landed " + "filler " * 5_000}])
    (hit,), characters = _characters_snipped(store, backend, monkeypatch, "pelican")
    assert "<mark>Pelican</mark>" in hit.snippet and hit.snippet.startswith("…") and hit.snippet.endswith("…")
    assert characters <= 2_048


def test_a_substring_snippet_of_a_long_message_reads_a_bounded_prefix(store):
    s = store.create_session("cli")
    store.append(s.id, [{"role": "user", "content": "ünïcode " * 10_000 + "needle"}])
    (hit,) = store.search("needle", substring=True)
    assert "<mark>" not in hit.snippet and len(hit.snippet) <= 120  # found past the prefix: the text's start


def test_a_substring_search_of_too_many_terms_is_refused_with_the_limit(store, kyoto):
    assert store.search(" ".join(f"w{i}" for i in range(31)) + " kyoto", substring=True) == []
    with pytest.raises(InvalidInput, match="at most 32 terms.*has 100"):
        store.search(" ".join(f"w{i}" for i in range(100)), substring=True)


def test_a_query_longer_than_the_limit_is_refused(store, kyoto):
    store.search("kyoto " + "x" * 19_000)  # within the limit: taken
    with pytest.raises(InvalidInput, match="20,000"):
        store.search("kyoto " * 4_000)


def test_reasoning_is_searched_only_when_asked(store):
    s = store.create_session("claude-code")
    asked, *_ = store.append(s.id, [
        {"uid": "asked", "role": "user", "content": "Which port does the service use?"},
        {"uid": "answer", "role": "assistant", "content": "It listens on 8080.",
         "reasoning": "The config file sets the listener; the zeppelin flag is unrelated."},
        {"uid": "said", "role": "assistant", "content": "The zeppelin lands at noon."},
    ])
    assert [h.uid for h in store.search("zeppelin")] == ["said"]  # the text only, by default
    found = {h.uid: h for h in store.search("zeppelin", include_reasoning=True)}
    assert set(found) == {"said", "answer"}
    assert "zeppelin" in found["answer"].snippet and "listener" in found["answer"].snippet  # cut from the reasoning
    assert store.search("listener config", include_reasoning=True)[0].uid == "answer"
    assert store.search("listener 8080", include_reasoning=True) == []  # text and reasoning are each judged whole
    store.rewind(s.id, asked.id)
    assert store.search("zeppelin", include_reasoning=True) == []  # rewound: never found


def test_include_reasoning_is_a_flag(store):
    with pytest.raises(InvalidInput):
        store.search("zeppelin", include_reasoning="yes")
