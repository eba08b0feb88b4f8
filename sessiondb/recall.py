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
- Rare words: bm25 weighs a word by how rare it is in the store, so a name or a project
  counts for more than a common word. A capitalised word counted twice (a proper noun)
  was measured and not kept: on LoCoMo the capitalised words are mostly the speakers'
  names, common in every conversation (hit@10 0.728 with, 0.730 without); nor were the
  question's adjacent words as phrases (0.727).
- Dates: a question naming a time ("in May 2023", "on 3 May, 2023", "during 2022")
  favours the messages written then or in the DATE_AFTER that follows (a conversation
  about something happens at it or after it): their score counts DATE_BOOST times. On
  LoCoMo's questions that name one: hit@10 0.62 without, 0.72 with.
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
  them with every text that speaks of what it asks. A run shorter than a trigram (太郎,
  a two-character name) is too short for that index: it is found by a scan of the text,
  as the query language finds it, and each such match adds SCAN_SCORE (a scan has no
  statistics to rank by).

Text is NFC-normalised first (an index holds NFC text too), and a question is bounded as
a search is: at most query.MAX_TERMS words and MAX_RECALL_TRIGRAMS trigrams are kept,
longer questions keep their first ones; none raises.

Stemming is English (the Porter stemmer on SQLite, the `english` Snowball stemmer on
PostgreSQL), and so are the stop words. Other languages are not stemmed by their own
grammar: a word goes through the same English rules on both sides, so it still finds
itself, case and accents folded, as in the words index (`canciones` finds `canciones`,
not `canción`); words of non-Latin scripts are left as they are; CJK text is matched by
its trigrams.
"""

from __future__ import annotations

import calendar
import re
from math import fsum, sqrt
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .query import MAX_TERM_LENGTH, MAX_TERMS, TRIGRAM, cjk_runs, fold, has_cjk

#: How much more a message written in the time a question names counts, and how long
#: after that time a message still counts as written in it.
DATE_BOOST, DATE_AFTER = 2.0, 30 * 86_400.0
#: What a match of a CJK run too short for the trigram index adds to a message's score.
SCAN_SCORE = 1.0
#: The share of a match's score the next and the previous match of its session gain.
NEXT_SHARE, PREVIOUS_SHARE = 0.6, 0.3
#: How many of the best-scored matches share their score (the rest are too far down to
#: lift a neighbour into any page).
SPREAD_FROM = 200
#: The most trigrams of CJK text a question keeps (each is one OR'd term).
MAX_RECALL_TRIGRAMS = 32
#: A word is common when more than this many messages hold it and more than COMMON_SHARE
#: of them (a speaker's name, a greeting): it adds to the score of a message the
#: question's rarer words matched, but does not make a match by itself, so a recall over
#: a large memory ranks the matches of its rarer words, not most of the memory. Below
#: COMMON_MESSAGES every word is ranked wherever it matches (LoCoMo's conversations are).
COMMON_MESSAGES, COMMON_SHARE = 5_000, 0.02
#: How many of the messages nearest a question's meaning are candidates, and the share
#: of the fused score their similarity carries (measured on LoCoMo: bench/recall.py).
NEAREST, MEANING_WEIGHT = 100, 0.3

_WORD = re.compile(r"[^\W_]+")
_MONTHS = {name.lower(): number for names in (calendar.month_name, calendar.month_abbr)
           for number, name in enumerate(names) if name}
# "3 May 2023", "May 3rd, 2023", "May 2023", "in 2023": a day and a month with a year, or a year after in/of/during.
_DATE = re.compile(
    r"\b(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?(" + "|".join(sorted(_MONTHS, key=len, reverse=True))
    + r")\.?(?:\s+(\d{1,2})(?:st|nd|rd|th)?)?,?\s+(\d{4})\b|\b(?:in|of|during)\s+(\d{4})\b",
    re.IGNORECASE)

# A question's words are split where a word is ("didn't" is "didn" and "t"), so the stop
# words are too; "won" and "don" (of won't, don't) stay words: a win, a name.
STOP_WORDS = frozenset(word for word in _WORD.findall("""
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
also just ever kind kinds sort sorts thing things way ways much many lot lots
""") if word not in ("won", "don"))


@dataclass(frozen=True)
class Recall:
    """What a question looks up: any of `words` (folded), any of `trigrams` (of its CJK
    text), and the messages written in `when` ([start, end) in seconds since the epoch,
    DATE_AFTER included) favoured, where it names a time; and, where the store has an
    embedder, the messages nearest its `meaning` (a unit vector of `space`,
    sessiondb.embedding)."""

    words: tuple[str, ...]
    trigrams: tuple[str, ...]
    when: tuple[float, float] | None = None
    meaning: bytes | None = None
    space: str = ""

    @property
    def empty(self) -> bool:
        return not self.words and not self.trigrams

    @property
    def needles(self) -> list[str]:
        """What a snippet looks for to find where a hit matches."""
        return [*self.words, *self.trigrams]


def question(text: str) -> Recall:
    """What `text`, a question in natural language, recalls. Never raises for any text."""
    if not text.isascii():  # an unpaired surrogate has no UTF-8 form: read it as "?"
        text = text.encode("utf-8", "replace").decode("utf-8")
    text = unicodedata.normalize("NFC", text.replace("\x00", " "))
    trigrams: list[str] = []
    for run in cjk_runs(text) if has_cjk(text) else ():
        run = fold(run)
        trigrams += [run[i:i + TRIGRAM] for i in range(max(1, len(run) - TRIGRAM + 1))]
    rest = _without_cjk(text)
    every = words(rest)
    content = dict.fromkeys(word for word in every if word not in STOP_WORDS)
    if not content and not trigrams:
        content = dict.fromkeys(every)  # nothing but stop words ("Who was it?"): recall them rather than nothing
    return Recall(tuple(content)[:MAX_TERMS], tuple(dict.fromkeys(trigrams))[:MAX_RECALL_TRIGRAMS], _when(rest))


def words(text: str) -> list[str]:
    """The words of `text` as recall reads them, folded and bounded as the index holds
    them; its CJK runs are not words (they are matched by their trigrams)."""
    return [fold(word[:MAX_TERM_LENGTH]) for word in _WORD.findall(_without_cjk(text))]


def _without_cjk(text: str) -> str:
    """`text` with each run of CJK text a space: what its words and dates are read from."""
    if has_cjk(text):
        for run in cjk_runs(text):
            text = text.replace(run, " ")
    return text


def _when(text: str) -> tuple[float, float] | None:
    """The time the question's first date names, DATE_AFTER added to its end (None if it names none)."""
    found = _DATE.search(text)
    if found is None:
        return None
    day, month, day_after, year, year_alone = found.groups()
    try:
        if year_alone:
            start, end = datetime(int(year_alone), 1, 1), datetime(int(year_alone) + 1, 1, 1)
        else:
            number, day = _MONTHS[month.lower()], int(day or day_after or 0)
            if day:
                start = datetime(int(year), number, day)
                end = start + timedelta(days=1)
            else:
                start, end = datetime(int(year), number, 1), datetime(int(year) + number // 12, number % 12 + 1, 1)
    except (ValueError, OverflowError):  # no such day or year ("31 June 2023", "in 0000")
        return None
    return (start.replace(tzinfo=timezone.utc).timestamp(), end.replace(tzinfo=timezone.utc).timestamp() + DATE_AFTER)


def rarer(counts: dict[str, int], messages: int) -> tuple[list[str], list[str]]:
    """The question's words split by how many messages hold each (`counts`, of `messages`):
    (those that make a match, the common ones that only add to a match's score). In a
    question of only common words, the rarest makes the matches."""
    common = [w for w, n in counts.items() if n > COMMON_MESSAGES and n > COMMON_SHARE * messages]
    rare = [w for w in counts if w not in common]
    if not rare and common:
        rare = [min(common, key=counts.__getitem__)]
        common.remove(rare[0])
    return rare, common


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


def favour(scores: dict[int, float], times: dict[int, float], question: Recall) -> dict[int, float]:
    """The scores with the messages written when the question says (Recall.when) counting DATE_BOOST times."""
    if question.when is None:
        return scores
    start, end = question.when
    return {mid: score * DATE_BOOST if start <= times[mid] < end else score for mid, score in scores.items()}


def fuse(words: dict[int, float], near: dict[int, float]) -> dict[int, float]:
    """One score from both legs: each leg's scores as standard scores over its own best
    NEAREST (the words' as spread and favoured, the vectors' similarities), weighed
    1 - MEANING_WEIGHT to MEANING_WEIGHT; a message one leg did not find counts as that
    leg's lowest. Without a vector leg, the words' scores as they are."""
    if not near:
        return words
    lexical, meaning = _standard(dict(best(words, NEAREST))), _standard(near)
    missed = (min(lexical.values(), default=0.0), min(meaning.values()))
    return {mid: (1.0 - MEANING_WEIGHT) * lexical.get(mid, missed[0]) + MEANING_WEIGHT * meaning.get(mid, missed[1])
            for mid in lexical.keys() | meaning.keys()}


def _standard(scores: dict[int, float]) -> dict[int, float]:
    """Each score as standard deviations above the mean of `scores` (0 for all when they are equal)."""
    if not scores:
        return {}
    mean = fsum(scores.values()) / len(scores)
    spread_ = sqrt(fsum((s - mean) ** 2 for s in scores.values()) / len(scores)) or 1.0
    return {mid: (s - mean) / spread_ for mid, s in scores.items()}


def found_by(mid: int, words: dict[int, float], near: dict[int, float]) -> str:
    """Which legs found a message: 'words', 'meaning' or 'words and meaning'."""
    return "words and meaning" if mid in words and mid in near else "meaning" if mid in near else "words"


def best(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """The `limit` best (id, score), ties newest first."""
    return sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:limit]
