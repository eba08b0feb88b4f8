"""Recall: a question in natural language, turned into what every backend's recall index looks up.

An agent asks its memory in its own words ("What did Caroline research?", "How about
ADK?"). The query language (sessiondb.query) would need every one of those words to
match; recall instead keeps the question's content words and matches any of them, ranked
by bm25 over a stemmed index, so rare words (a name, a project) count for more than
common ones and `researched` finds `research`. What is built here is the same for every
backend; only the index query is the backend's own:

- Stop words out: the English function words and question words below; what is left
  are the content words, matched with OR. A question of nothing but stop words keeps
  its words (a question is never made empty by what it asks with).
- Weights: a word repeated counts once; a word the question writes with a capital
  letter where a sentence does not start (a name, a product) counts RECALL_BOOST times
  (measured on LoCoMo: bench/recall.py). bm25 itself weighs rare words over common ones.
- Conversation: a match gains a share of the score of the matches next to it in its
  session (NEXT_SHARE of the one before it, PREVIOUS_SHARE of the one after): an answer
  is often a reply ("Definitely! And some old friends from the tournaments.") to the
  message that holds most of the question's words ("Who will you invite to your gaming
  party?"). Only matches are ranked: every hit shares a word with the question.
  Measured on LoCoMo's development conversations (bench/recall.py): hit@10 0.676
  without, 0.730 with (0.747 when neighbours that match nothing were hits too, which
  made a message that shares no word with the question a hit).
- Text in a script written without spaces (CJK) has no words to take out, so its runs
  are cut into the trigrams the trigram index holds, OR'd: a question shares some of
  them with every text that speaks of what it asks.

Text is NFC-normalised first (an index holds NFC text too), and a question is bounded as
a search is: at most query.MAX_TERMS words and MAX_RECALL_TRIGRAMS trigrams are kept,
longer questions keep their first ones; none raises.

Stemming is English (the Porter stemmer on SQLite, the `english` Snowball stemmer on
PostgreSQL); a word of another language is matched as it is written, case and accents
folded, as the words index matches it (a stemmer leaves words it does not know alone).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .query import MAX_TERM_LENGTH, MAX_TERMS, TRIGRAM, cjk_runs, fold, has_cjk

#: How much more a capitalised word inside a sentence counts (bench/recall.py measures it).
RECALL_BOOST = 1
#: The share of a match's score the next and the previous match of its session gain.
NEXT_SHARE, PREVIOUS_SHARE = 0.6, 0.3
#: How many of the best-scored matches share their score (the rest are too far down to
#: lift a neighbour into any page).
SPREAD_FROM = 200
#: The most trigrams of CJK text a question keeps (each is one OR'd term).
MAX_RECALL_TRIGRAMS = 32

_WORD = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"[.!?]\s*$")

STOP_WORDS = frozenset("""
a about above after again against all am an and any are aren't as at be because been before being below
between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each
few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers
herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own same
shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them
themselves then there there's these they they'd they'll they're they've this those through to too under
until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which
while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours
yourself yourselves
also just ever kind kinds sort sorts thing things way ways much many lot lots s t d ll m re ve
""".split())


@dataclass(frozen=True)
class Recall:
    """What a question looks up: any of `words` (folded, each with its weight: how many
    times it counts) and any of `trigrams` (of its CJK text)."""

    words: tuple[tuple[str, int], ...]
    trigrams: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.words and not self.trigrams

    @property
    def needles(self) -> list[str]:
        """What a snippet looks for to find where a hit matches."""
        return [word for word, _ in self.words] + list(self.trigrams)


def question(text: str) -> Recall:
    """What `text`, a question in natural language, recalls. Never raises for any text."""
    if not text.isascii():  # an unpaired surrogate has no UTF-8 form: read it as "?"
        text = text.encode("utf-8", "replace").decode("utf-8")
    text = unicodedata.normalize("NFC", text.replace("\x00", " "))
    trigrams: list[str] = []
    if has_cjk(text):
        for run in cjk_runs(text):
            text = text.replace(run, " ")
            run = fold(run)
            trigrams += [run[i:i + TRIGRAM] for i in range(max(1, len(run) - TRIGRAM + 1))]
    weights: dict[str, int] = {}
    for found in _WORD.finditer(text):
        word = found.group()[:MAX_TERM_LENGTH]
        folded = fold(word)
        if folded in STOP_WORDS:
            continue
        inside = found.start() > 0 and not _SENTENCE_END.search(text[:found.start()])
        weight = RECALL_BOOST if inside and word[:1].isupper() else 1
        weights[folded] = max(weights.get(folded, 0), weight)
    if not weights and not trigrams:
        # Nothing but stop words ("Who was it?"): recall them rather than nothing.
        weights = dict.fromkeys((fold(w)[:MAX_TERM_LENGTH] for w in _WORD.findall(text)), 1)
    kept = list(weights.items())[:MAX_TERMS]
    return Recall(tuple(kept), tuple(dict.fromkeys(trigrams))[:MAX_RECALL_TRIGRAMS])


def spread(scores: dict[int, float], neighbours: dict[int, tuple[int | None, int | None]]) -> dict[int, float]:
    """Every match's score once its neighbours have shared theirs: `scores` are the
    matches' own (higher is better), `neighbours` each match's previous and next message
    in its session (None at either end, or where the filters leave none); a neighbour
    that is not a match gains nothing."""
    total = dict(scores)
    for mid, (previous, following) in neighbours.items():
        score = scores[mid]
        if following in total:
            total[following] += NEXT_SHARE * score
        if previous in total:
            total[previous] += PREVIOUS_SHARE * score
    return total


def best(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """The `limit` best (id, score), ties newest first."""
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:limit]
