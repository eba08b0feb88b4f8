"""The search query language, parsed into a plain structure that every backend compiles.

    words            every word must match (AND)
    "quoted phrase"  the words in this order
    a OR b           either (binds the terms on each side of it)
    -word, NOT word  must not match (also -"a phrase")
    prefix*          any word starting with `prefix`

Whatever a person types parses: malformed syntax is read as literal words, never as an
error. A quote without a partner is dropped, parentheses are separators, and an operator
with nothing to act on (`OR` at either end, `NOT` at the end, a lone `-` or `*`) is a
literal word. A query of nothing but exclusions searches for the excluded words instead,
since "everything except" is not a search. Only upper-case OR, AND, NOT are operators.

Queries containing CJK text (or any query in substring mode) are substring searches:
each term is matched as a literal substring, `*` is literal and parentheses are kept.

Nothing here does I/O; backends turn a Query into their own syntax (FTS5 strings, tsquery)
with every term passed as data, never as syntax. The substring helpers at the end (a LIKE
pattern with its wildcards escaped, a snippet around substring matches) are the same for
every backend, and so is what a substring match folds (`fold`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE = "<mark>", "</mark>"  # around each match in a snippet
ELLIPSIS = "…"  # where a snippet cuts the text
LIKE_SNIPPET_CONTEXT = 60  # characters either side of a substring match
MAX_TERMS = 64  # a longer query keeps its first 64 terms
MAX_TERM_LENGTH = 256
#: The longest query taken (longer is InvalidInput): 64 terms of 256 characters fit in
#: it, and parsing stays a few milliseconds whatever is sent.
MAX_QUERY_LENGTH = 20_000
#: The most terms of a substring query (more is InvalidInput, not cut as words are): each
#: is a LIKE condition, and SQLite refuses an expression of some 60 of them.
MAX_SUBSTRING_TERMS = 32
#: A snippet's cost is bounded whatever a hit's text holds: the first match is looked for
#: in the text's first SNIPPET_SCAN characters, and the snippet function (FTS5's
#: snippet(), ts_headline, like_snippet) is given the SNIPPET_WINDOW characters around it
#: only. Both cost time in the number of characters handed to them, more than linearly
#: for one word repeated (a 96 KB message of one word took seconds).
SNIPPET_SCAN = 65_536
SNIPPET_WINDOW = 1_024

# Scripts written without spaces between words (and Hangul, whose words carry particles):
# the word tokenizer cannot split them, so they are searched as substrings.
_CJK_CLASS = (
    "[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)
_CJK = re.compile(_CJK_CLASS)
_CJK_RUNS = re.compile(_CJK_CLASS + "+")
_NOT_CJK_RUNS = re.compile("[^" + _CJK_CLASS[1:] + "+")  # what lies between the runs

_OPERATORS = frozenset({"OR", "AND", "NOT"})
_WORDS = re.compile(r"[^\W_]+")


def has_cjk(text: str) -> bool:
    """Whether `text` contains characters of a script written without spaces."""
    return bool(_CJK.search(text))


def cjk_runs(text: str) -> list[str]:
    """The runs of characters of scripts written without spaces in `text`, in order.

    Split out between the runs of other characters: matching the (usual) other characters
    in long runs costs half of trying each position for a CJK run. (The indexer has the
    runs of a message's text from `indexable_runs`, in the pass that spaces them out.)"""
    if text.isascii():
        return []
    return [run for run in _NOT_CJK_RUNS.split(text) if run]


TRIGRAM = 3  # characters in a trigram


def indexable(text: str) -> str:
    """The text a words index is given for `text`: NFC (a question is normalised the same
    way, so text stored decomposed is found by a composed query), a NUL read as a space
    (text after it is indexed like any other), and each run of a script written without
    spaces set apart by spaces, so a word of another script inside it (`Python` in
    `我用Python写代码`) is a word of its own."""
    return indexable_runs(text)[0]


def indexable_runs(text: str) -> tuple[str, list[str]]:
    """`indexable(text)`, and the runs of scripts written without spaces in it (its
    `cjk_runs`), both from one pass over the text: the indexer asks both of every message,
    and a second pass cost it as much as the first (about 60k instructions a message of
    400 characters, bench/exact.py)."""
    if text.isascii():
        return (text.replace("\x00", " ") if "\x00" in text else text), []
    runs: list[str] = []

    def spaced(run: re.Match[str]) -> str:
        runs.append(run.group())
        return f" {run.group()} "

    return _CJK_RUNS.sub(spaced, unicodedata.normalize("NFC", text).replace("\x00", " ")), runs

#: Hits are the best-ranked of at most this many newest matches of a query and its
#: filters, on every backend, so the same query finds the same hits wherever it runs.
#: Ranking reads every match it ranks, and a common word can match most of a store
#: (30,000 of 200,000 messages): ranking the newest 1,000 costs a few milliseconds, all of
#: them tens. Recency is the right tie-breaker for an agent's memory, a more specific query
#: reaches further back, and no search returns more than 1,000 hits.
RANK_WINDOW = 1000


def through_trigrams(text: str) -> bool:
    """Whether a substring term is served (and ranked) by a trigram index, which holds only
    text of scripts written without spaces: three or more characters, all of such scripts.
    Any other substring term is a scan of the text, newest first and unranked."""
    return len(text) >= TRIGRAM and _CJK_RUNS.fullmatch(text) is not None


@dataclass(frozen=True)
class Term:
    """One search term: a word, a prefix or a phrase (or, in substring mode, a substring)."""

    text: str
    phrase: bool = False
    prefix: bool = False


@dataclass(frozen=True)
class Query:
    """What to find: every group must match (a group matches if any of its terms does)
    and no excluded term may match."""

    groups: tuple[tuple[Term, ...], ...]
    excluded: tuple[Term, ...]
    substring: bool
    given: int = 0  # how many terms were typed, before the first MAX_TERMS were kept

    @property
    def empty(self) -> bool:
        return not self.groups

    @property
    def needles(self) -> list[str]:
        """What a snippet looks for to find where a hit matches: each term's text, or
        for a word term its first word (punctuation between a phrase's words varies)."""
        if self.substring:
            return [t.text for group in self.groups for t in group]
        return [words[0] for group in self.groups for t in group if (words := _WORDS.findall(t.text))]


@dataclass
class _Token:
    text: str
    quoted: bool = False
    negated: bool = False
    prefix: bool = False

    @property
    def operator(self) -> str | None:
        return self.text if not self.quoted and not self.negated and self.text in _OPERATORS else None


def parse(query: str, *, substring: bool = False) -> Query:
    """Parse what a person typed. Never raises for any text; non-text input is refused
    by the caller. `substring` forces substring mode (it is implied by CJK text). The
    query is read in NFC, as the indexes hold text (indexable)."""
    query = unicodedata.normalize("NFC", query)
    substring = substring or has_cjk(query)
    tokens = _lex(query, substring=substring)
    groups, excluded = _combine(tokens)
    keep = (lambda t: bool(t.text)) if substring else (lambda t: _has_word(t.text))
    groups = [g for g in ([t for t in group if keep(t)] for group in groups) if g]
    excluded = [t for t in excluded if keep(t)]
    # In substring mode every term is a literal substring: no prefixes, no word splitting.
    as_term = (lambda t: Term(t.text, phrase=True)) if substring else _as_term
    groups = [[as_term(t) for t in g] for g in groups]
    excluded = [as_term(t) for t in excluded]
    if not groups:
        # Only exclusions (or nothing): search for the excluded words themselves.
        groups = [[t] for t in excluded]
        excluded = []
    given = sum(map(len, groups)) + len(excluded)
    count = 0
    bounded: list[tuple[Term, ...]] = []
    for g in groups:
        if count + len(g) > MAX_TERMS:
            break
        bounded.append(tuple(g))
        count += len(g)
    return Query(tuple(bounded), tuple(excluded[: max(0, MAX_TERMS - count)]), substring, given)


def _has_word(text: str) -> bool:
    return any(ch.isalnum() for ch in text)


def _lex(query: str, *, substring: bool) -> list[_Token]:
    text = query.replace("\x00", " ")
    if text.count('"') % 2:
        cut = text.rfind('"')  # the last quote has no partner
        text = text[:cut] + " " + text[cut + 1:]
    separators = set() if substring else set("()")
    tokens: list[_Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace() or ch in separators:
            i += 1
            continue
        negated = False
        if ch == "-" and i + 1 < n and text[i + 1] == '"':
            negated, i = True, i + 1
            ch = '"'
        if ch == '"':
            end = text.index('"', i + 1)  # quotes are balanced now
            token = _Token(text[i + 1:end], quoted=True, negated=negated)
            i = end + 1
            if i < n and text[i] == "*" and not substring:
                token.prefix = True
                i += 1
            tokens.append(token)
            continue
        start = i
        while i < n and not text[i].isspace() and text[i] != '"' and text[i] not in separators:
            i += 1
        word = text[start:i]
        token = _Token(word)
        if word.startswith("-") and len(word) > 1:
            token.text, token.negated = word[1:], True
        if not substring and token.text.endswith("*") and token.text.strip("*"):
            token.text, token.prefix = token.text.rstrip("*"), True
        tokens.append(token)
    for token in tokens:
        token.text = token.text[:MAX_TERM_LENGTH]
    return tokens


def _combine(tokens: list[_Token]) -> tuple[list[list[_Token]], list[_Token]]:
    """Apply NOT, then OR/AND, reading any operator with nothing to act on as a word."""
    resolved: list[_Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.operator == "NOT" and following is not None and following.operator is None and not following.negated:
            following.negated = True
            resolved.append(following)
            i += 2
            continue
        resolved.append(token)
        i += 1

    def positive_atom(k: int) -> bool:
        return 0 <= k < len(resolved) and resolved[k].operator is None and not resolved[k].negated

    groups: list[list[_Token]] = []
    excluded: list[_Token] = []
    join_next = False
    for k, token in enumerate(resolved):
        op = token.operator
        if op == "OR" and positive_atom(k - 1) and positive_atom(k + 1):
            join_next = True
            continue
        if op == "AND" and 0 < k < len(resolved) - 1 and resolved[k - 1].operator is None \
                and resolved[k + 1].operator is None:
            continue
        if op is not None:
            token = _Token(token.text, quoted=True)  # a lone operator: the literal word
        if token.negated:
            excluded.append(token)
        elif join_next and groups:
            groups[-1].append(token)
        else:
            groups.append([token])
        join_next = False
    return groups, [_Token(t.text, t.quoted, False, t.prefix) for t in excluded]


def _as_term(token: _Token) -> Term:
    return Term(token.text, phrase=token.quoted, prefix=token.prefix)


# --- substring matching, the same in every backend ---------------------------------------


def like_pattern(text: str) -> str:
    """A LIKE pattern matching `text` anywhere, with `\\`, `%` and `_` escaped (ESCAPE '\\')."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


# Letters with no canonical decomposition that PostgreSQL's unaccent folds all the same
# (looked up after lower-casing, so Æ, Ø and Ǆ go too); of Cyrillic, unaccent folds ё only.
_LETTERS = {"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i",
            "ĳ": "ij", "ſ": "s", "ŉ": "'n", "ħ": "h", "ĸ": "q", "ŀ": "l", "ŋ": "n", "ŧ": "t", "ǆ": "dz", "ǉ": "lj",
            "ǌ": "nj", "ё": "е"}
_ACCENTS = re.compile("[\u0300-\u036f]+")  # the combining diacritics of Latin, Greek and Cyrillic


def _fold_slowly(character: str) -> str:
    if "\ufb00" <= character <= "\ufb06" or "\uff01" <= character <= "\uff5e":
        return unicodedata.normalize("NFKC", character).lower()  # ligatures, full-width forms
    if "\u0400" <= character <= "\u052f":
        return _LETTERS.get(character, character)  # й stays й, as in unaccent
    bare = _ACCENTS.sub("", unicodedata.normalize("NFD", character))
    return _LETTERS.get(bare, bare)


# Every character that fold changes once the text is lower-cased, looked up in a table
# made once: the accented letters of Latin-1 to Latin Extended-B, Greek, Latin and Greek
# Extended, the letters above, the combining diacritics themselves, ligatures (ﬁ) and
# full-width forms (Ａ).
_FOLDED = {c: f for c in map(chr, [*range(0xC0, 0x250), *range(0x300, 0x530), *range(0x1E00, 0x2000),
                                   *range(0xFB00, 0xFB07), *range(0xFF01, 0xFF5F)])
           if (f := _fold_slowly(c)) != c}
_FOLDABLE = re.compile("[" + "".join(map(re.escape, _FOLDED)) + "]")


def fold(text: str) -> str:
    """What substring matching compares, on every backend: lower case, without accents, NFC.

    The accents are the combining diacritics of Latin, Greek and Cyrillic letters (é, ü,
    ñ, ç, å, ő...), taken off their canonical decomposition, and the letters listed in
    _LETTERS are spelled out, as PostgreSQL's `lower(unaccent(...))` does (the
    `search_fold` of that backend); ligatures and full-width forms become the letters
    they are made of (ﬁ, Ａ). Other scripts are kept as they are. Called for every row a
    substring scan reads, so only the accented letters a text holds are looked up, in a
    table made once (tests/postgres/test_substring_folding.py holds it to the server's)."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    lowered = unicodedata.normalize("NFC", lowered)  # as the indexes and queries hold text
    return _FOLDABLE.sub(lambda found: _FOLDED[found.group()], lowered)


def first_match(text: str, needles: list[str], *, words: bool = False) -> tuple[int, int] | None:
    """Where the first of `needles` occurs in `text` (start, end), folded as substring
    matching folds, looked for in the first SNIPPET_SCAN characters only; with `words`,
    only where a word starts. None when none is found there."""
    folded = _fold_in_place(text[:SNIPPET_SCAN])
    found = []
    for needle in filter(None, needles):
        target = _fold_in_place(needle)
        if words:
            match = re.search(r"(?<![^\W_])" + re.escape(target), folded)
            if match:
                found.append((match.start(), match.end()))
        elif (at := folded.find(target)) >= 0:
            found.append((at, at + len(target)))
    return min(found) if found else None


def snippet_window(text: str, needles: list[str], *, words: bool = False) -> tuple[int, int]:
    """The span of `text` (start, end) a snippet function is given: SNIPPET_WINDOW
    characters around the first match (first_match), or the text's start."""
    if len(text) <= SNIPPET_WINDOW:
        return 0, len(text)
    match = first_match(text, needles, words=words)
    start = 0 if match is None else max(0, min(match[0] - SNIPPET_WINDOW // 2, len(text) - SNIPPET_WINDOW))
    return start, start + SNIPPET_WINDOW


def windowed(snippet: str, start: int, end: int, length: int) -> str:
    """A snippet cut from text[start:end] of a text of `length`, marked as cut where the
    window cut the text and the snippet does not say so already."""
    if start > 0 and not snippet.startswith(ELLIPSIS):
        snippet = ELLIPSIS + snippet
    if end < length and not snippet.endswith(ELLIPSIS):
        snippet += ELLIPSIS
    return snippet


def like_snippet(text: str, needles: list[str]) -> str:
    """A snippet around the first needle found in `text` (first_match), every occurrence highlighted."""
    match = first_match(text, needles)
    if match is None:
        return text[: 2 * LIKE_SNIPPET_CONTEXT]
    at, found_end = match
    start = max(0, at - LIKE_SNIPPET_CONTEXT)
    end = min(len(text), found_end + LIKE_SNIPPET_CONTEXT)
    window = text[start:end]
    window_folded = _fold_in_place(window)
    marks: list[tuple[int, int]] = []
    for n in needles:
        n_folded, pos = _fold_in_place(n), 0
        while n_folded and (pos := window_folded.find(n_folded, pos)) >= 0:
            marks.append((pos, pos + len(n_folded)))
            pos += len(n_folded)
    out, cursor = [], 0
    for begin, finish in sorted(marks):
        if begin < cursor:
            continue
        out += [window[cursor:begin], HIGHLIGHT_OPEN, window[begin:finish], HIGHLIGHT_CLOSE]
        cursor = finish
    out.append(window[cursor:])
    return (ELLIPSIS if start else "") + "".join(out) + (ELLIPSIS if end < len(text) else "")


def _fold_in_place(text: str) -> str:
    """`fold`, character by character where that keeps every character's position (so
    offsets into the fold are offsets into the text); a character whose fold is longer or
    empty (ß, a lone accent) is kept as it is."""
    if text.isascii():
        return text.lower()
    return "".join(map(_fold_character, text))


@lru_cache(maxsize=4096)
def _fold_character(character: str) -> str:
    folded = fold(character)
    return folded if len(folded) == 1 else character
