"""The memory backend: the store's tables in this process's memory (`memory://NAME`).

It implements the primitives (store/rows.py's `Rows`, `write`, `read`, a search by scan)
and nothing of the rules above them: whatever a user can observe of a store on it comes
from the backend-neutral layer, so it is the fast backend for unit tests of that layer
and the proof that the primitives are enough. Nothing survives the process.

One lock takes writes in turn; a write works on a copy-on-write view of the committed
tables (a table is copied the first time the write changes it) and commit swaps the view
in, so a unit of work that raises leaves nothing and a read holds one snapshot by keeping
the tables that were committed when it began. Stores opened under the same NAME in one
process share their tables (a reopen sees what was written); `memory://` alone is a new,
private store each time.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
import tempfile
import threading
from array import array
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cmp_to_key
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar
from urllib.parse import unquote, urlsplit

from ..embedding import Embedder, EmbedderFailed, Space, other_space, vectors
from ..errors import InvalidInput
from ..model import SearchHit, VerifyReport
from ..query import RANK_WINDOW, Query, Term, cjk_runs, fold, indexable, like_snippet
from ..recall import COMMON_MESSAGES, NEAREST, SPREAD_FROM, Recall, best, favour, found_by, fuse, rarer, spread
from . import commands as cmd
from .backend import Traces
from .rows import INSERTED, INSERTED_ORDER, TABLES, UNIQUE, Condition, Row, Table, Taken, Where, active_at, one_of

T = TypeVar("T")

SCHEME = "memory"
#: What a column left out of an insert takes (the engines' DEFAULTs; others are NULL).
DEFAULTS: dict[str, dict[str, Any]] = {
    "sessions": {"message_count": 0, "tool_call_count": 0, "pinned": 0, "archived": 0, "hidden": 0,
                 "metadata": "{}"},
    "messages": {"state": "active"},
    "usage": {"provider": "", "task": "", "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
              "cache_write_tokens": 0, "reasoning_tokens": 0, "cost_usd": 0.0, "calls": 0},
    "turns": {"receipts": "[]"},
    "gateway_routes": {"state": "idle"},
}
#: The tables whose rows go with their session (rows.Rows.delete), and the column naming it.
CASCADE = ("messages", "usage", "usage_calls", "turns", "compaction_leases")
TOOL_TEXT_LIMIT = 8192  # characters of a tool message searched, as the engines' indexes hold


@dataclass
class _Tables:
    """Committed tables (never changed once committed) or a write's view of them."""

    rows: dict[str, dict[tuple, Row]]  # table -> key -> row (a row dict is replaced, never changed)
    unique: dict[str, dict[tuple, tuple]]  # UNIQUE name -> its columns' values -> the row's key
    counters: dict[str, int] = field(default_factory=lambda: {"serial": 0, INSERTED: 0, "token": 0})

    @classmethod
    def empty(cls) -> _Tables:
        return cls({name: {} for name in TABLES}, {name: {} for name in UNIQUE})


class _Shared:
    """One named store: its committed tables and the lock its writers take turns by."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables = _Tables.empty()
        self.meaning = _Meaning()


class _Meaning:
    """The vectors of a memory store's messages (sessiondb.embedding), computed when a
    recall needs them (a memory store runs nothing in the background), kept by id with
    the text they were computed from, in one embedder's space at a time, as the other
    backends keep theirs."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.space = ""
        self.by_id: dict[int, tuple[str, array]] = {}

    def forget(self) -> None:
        with self.lock:
            self.space, self.by_id = "", {}

    def keep_only(self, ids: set[int]) -> None:
        """Drop the vectors of messages no longer stored."""
        with self.lock:
            self.by_id = {mid: kept for mid, kept in self.by_id.items() if mid in ids}

    def nearest(self, embedder: Embedder, question: Recall,
                scanned: list[tuple[Row, str]]) -> tuple[dict[int, float], str | None]:
        """The NEAREST scanned messages to the question's meaning with their similarity,
        and why there are none where the vectors cannot be used."""
        space = Space.of(embedder).key
        if self.space not in ("", space):
            return {}, other_space(self.space, space)
        try:
            self.compute(embedder, scanned)
        except EmbedderFailed as exc:
            return {}, str(exc)
        with self.lock:
            known = [(row["id"], self.by_id[row["id"]][1]) for row, text in scanned if text.strip()]
        asked = array("f", question.meaning)
        return dict(best({mid: math.fsum(map(operator.mul, asked, vector)) for mid, vector in known}, NEAREST)), None

    def compute(self, embedder: Embedder, scanned: list[tuple[Row, str]]) -> int:
        """Compute the vectors `scanned` lacks (or whose text changed); how many it holds."""
        with self.lock:
            missing = [(row["id"], text) for row, text in scanned
                       if text.strip() and self.by_id.get(row["id"], ("",))[0] != text]
            made = vectors(embedder, [indexable(text) for _, text in missing])
            self.space = Space.of(embedder).key
            self.by_id.update({mid: (text, array("f", vector)) for (mid, text), vector in zip(missing, made)})
            return len(self.by_id)


_stores: dict[tuple[str, str | None], _Shared] = {}
_stores_lock = threading.Lock()


def _table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"no table {name!r}") from None


def _check_column(table: str, name: str) -> None:
    if name == INSERTED and table in INSERTED_ORDER:
        return
    if name not in _table(table).columns:
        raise ValueError(f"{table} has no column {name!r}")


def _holds(value: Any, wanted: Any) -> bool:
    """Whether a stored value meets a condition, as SQL has it (NULL meets none but IS NULL)."""
    if not isinstance(wanted, Condition):
        return value is None if wanted is None else (value is not None and value == wanted)
    if value is None:
        return False
    op, given = wanted.op, wanted.value
    if op == "in":
        return value in given
    if op == "prefix":
        return isinstance(value, str) and value.startswith(given)
    if op == "folded":
        return isinstance(value, str) and value.translate(_ASCII_LOWER) == given.translate(_ASCII_LOWER)
    if given is None:
        return False
    return {">": value > given, "<": value < given, ">=": value >= given, "<=": value <= given,
            "!=": value != given}[op]


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _sorted(rows: list[Row], order: Sequence[str]) -> list[Row]:
    """Rows in `order`; NULL first ascending and last descending (SQLite's order)."""
    def compare(a: Row, b: Row) -> int:
        for spec in order:
            name = spec.lstrip("-")
            sign = -1 if spec.startswith("-") else 1
            x, y = a[name], b[name]
            if x == y:
                continue
            if x is None or y is None:
                return -sign if x is None else sign
            return -sign if x < y else sign
        return 0
    return sorted(rows, key=cmp_to_key(compare)) if order else rows


class MemoryRows:
    """A transaction's view of a memory store's tables (store/rows.py's Rows)."""

    def __init__(self, tables: _Tables, *, writable: bool) -> None:
        self._tables = tables
        self._writable = writable
        self._copied: set[str] = set()  # tables (and UNIQUE names) this view owns a copy of

    # --- reading ------------------------------------------------------------------------

    def _matching(self, table: str, where: Where) -> list[tuple[tuple, Row]]:
        _table(table)
        for name in where:
            _check_column(table, name)
        rows = self._tables.rows[table]
        if set(where) == set(TABLES[table].key) and not any(isinstance(v, Condition) for v in where.values()):
            key = tuple(where[c] for c in TABLES[table].key)  # one row by its key: no scan
            found = rows.get(key)
            return [(key, found)] if found is not None else []
        return [(key, row) for key, row in rows.items() if all(_holds(row.get(c), w) for c, w in where.items())]

    def select(self, table: str, where: Where = {}, *, columns: Sequence[str] | None = None,
               order: Sequence[str] = (), limit: int | None = None, lock: bool = False) -> list[Row]:
        names = tuple(columns) if columns is not None else _table(table).columns
        for name in (*names, *(spec.lstrip("-") for spec in order)):
            _check_column(table, name)
        found = _sorted([row for _, row in self._matching(table, where)], order)
        if limit is not None:
            found = found[: int(limit)]
        return [{name: row.get(name) for name in names} for row in found]

    def count(self, table: str, where: Where = {}, *, sums: Sequence[str] = (),
              by: str | None = None) -> dict[Any, Row]:
        for name in (*sums, *([by] if by is not None else [])):
            _check_column(table, name)
        groups: dict[Any, Row] = {}
        if by is None:
            groups[None] = {"count": 0, **{c: 0 for c in sums}}
        for _, row in self._matching(table, where):
            group = groups.setdefault(row.get(by) if by is not None else None, {"count": 0, **{c: 0 for c in sums}})
            group["count"] += 1
            for c in sums:
                if row.get(c) is not None:
                    group[c] += row[c]
        return groups

    # --- writing ------------------------------------------------------------------------

    def _own(self, table: str) -> dict[tuple, Row]:
        """The table's rows, copied into this view the first time it changes them."""
        if not self._writable:
            raise InvalidInput("a read transaction writes nothing")
        if table not in self._copied:
            self._tables.rows[table] = dict(self._tables.rows[table])
            for name, (owner, _) in UNIQUE.items():
                if owner == table:
                    self._tables.unique[name] = dict(self._tables.unique[name])
            self._copied.add(table)
        return self._tables.rows[table]

    def _unique_values(self, table: str, row: Row) -> Iterable[tuple[str, tuple]]:
        """Each UNIQUE constraint of `table` and `row`'s values under it (none holding NULL)."""
        for name, (owner, columns) in UNIQUE.items():
            values = tuple(row.get(c) for c in columns)
            if owner == table and None not in values:
                yield name, values

    def _conflict(self, table: str, row: Row, key: tuple, *, own_key: tuple | None = None) -> str | None:
        """The constraint `row` (stored under `key`) would break, or None."""
        if key != own_key and key in self._tables.rows[table]:
            return "key"
        for name, values in self._unique_values(table, row):
            holder = self._tables.unique[name].get(values)
            if holder is not None and holder != own_key:
                return name
        return None

    def _store(self, table: str, key: tuple, row: Row) -> None:
        self._own(table)[key] = row
        for name, values in self._unique_values(table, row):
            self._tables.unique[name][values] = key

    def _unstore(self, table: str, key: tuple) -> Row:
        row = self._own(table).pop(key)
        for name, values in self._unique_values(table, row):
            self._tables.unique[name].pop(values, None)
        return row

    def insert(self, table: str, rows: Sequence[Row], *, skip_taken: bool = False) -> list[int | None]:
        spec = _table(table)
        counters = self._tables.counters
        ids: list[int | None] = []
        done: list[tuple] = []  # keys inserted by this call, taken back if a row is taken
        before = dict(counters)
        for given in rows:
            for name in given:
                _check_column(table, name)
            row = {**{c: None for c in spec.columns}, **DEFAULTS.get(table, {}), **given}
            if spec.serial is not None and row[spec.serial] is None:
                row[spec.serial] = counters["serial"] + 1
            key = tuple(row[c] for c in spec.key)
            taken = self._conflict(table, row, key)
            if taken is not None:
                if skip_taken:
                    ids.append(None)
                    continue
                for done_key in done:
                    self._unstore(table, done_key)
                counters.update(before)
                raise Taken(table, taken)
            if spec.serial is not None:
                counters["serial"] = max(counters["serial"], row[spec.serial])
            if table in INSERTED_ORDER:
                counters[INSERTED] += 1
                row[INSERTED] = counters[INSERTED]
            self._store(table, key, row)
            done.append(key)
            ids.append(row[spec.serial] if spec.serial is not None else 0)
        return ids

    def update(self, table: str, where: Where, *, set: Row | None = None, add: Row | None = None,
               greatest: Row | None = None) -> int:
        spec = _table(table)
        set, add, greatest = set or {}, add or {}, greatest or {}
        for name in (*set, *add, *greatest):
            _check_column(table, name)
        matched = self._matching(table, where)
        if not (set or add or greatest):
            return len(matched)
        changed: list[tuple[tuple, tuple, Row]] = []
        for key, row in matched:
            new = {**row, **set}
            for c, amount in add.items():
                new[c] = (new[c] or 0) + amount if new[c] is not None else None
            for c, floor in greatest.items():
                new[c] = floor if new[c] is None else max(new[c], floor)
            changed.append((key, tuple(new[c] for c in spec.key), new))
        # Check every changed row before changing any, so a refused update changes nothing.
        moving = {key for key, _, _ in changed}
        seen: dict[str, list[tuple]] = {}  # (`set` names the columns to set here)
        for key, new_key, new in changed:
            if new_key != key and new_key in self._tables.rows[table] and new_key not in moving:
                raise Taken(table, "key")
            for name, values in self._unique_values(table, new):
                holder = self._tables.unique[name].get(values)
                if (holder is not None and holder not in moving) or values in seen.setdefault(name, []):
                    raise Taken(table, name)
                seen[name].append(values)
        for key, _, _ in changed:
            self._unstore(table, key)
        for _, new_key, new in changed:
            self._store(table, new_key, new)
        return len(changed)

    def delete(self, table: str, where: Where) -> int:
        gone = [key for key, _ in self._matching(table, where)]
        for key in gone:
            self._unstore(table, key)
        if table == "sessions" and gone:
            ids = {key[0] for key in gone}
            for child in CASCADE:
                for key, row in list(self._tables.rows[child].items()):
                    if row["session_id"] in ids:
                        self._unstore(child, key)
            for key, row in list(self._tables.rows["sessions"].items()):
                if row["parent_session_id"] in ids:
                    self._store("sessions", key, {**row, "parent_session_id": None})
        return len(gone)

    def recent(self, where: Where = {}, *, since: float | None = None, until: float | None = None,
               after: tuple[float, str] | None = None, limit: int) -> list[Row]:
        def position(row: Row) -> tuple[float, str]:
            return active_at(row), row["id"]

        found = [row for _, row in self._matching("sessions", where)
                 if (since is None or position(row)[0] >= since) and (until is None or position(row)[0] < until)
                 and (after is None or position(row) < tuple(after))]
        columns = TABLES["sessions"].columns
        return [{c: row[c] for c in columns} for row in sorted(found, key=position, reverse=True)[:limit]]

    def next_token(self) -> int:
        if not self._writable:
            raise InvalidInput("a read transaction takes no fencing token")
        self._tables.counters["token"] += 1
        return self._tables.counters["token"]


class MemoryBackend:
    """A handle on a memory store (see the module docstring)."""

    def __init__(self, name: str = "", *, profile: str | None = None, embedder: Embedder | None = None) -> None:
        self.name = name
        self.profile = profile
        self._embedder = embedder
        self.location = f"{SCHEME}://{name}"
        if name:
            with _stores_lock:
                self._shared = _stores.setdefault((name, profile), _Shared())
        else:
            self._shared = _Shared()
        # A refused batch is kept beside the store, as every backend does; a memory store
        # has no directory of its own, so it gets one under the temporary directory.
        keep = re.sub(r"[^A-Za-z0-9_.-]", "_", name) or f"anonymous-{id(self._shared)}"
        self.spool_anchor = Path(tempfile.gettempdir()) / "sessiondb-memory" / f"{os.getpid()}-{keep}" / "store"
        self._closed = False

    def close(self) -> None:
        self._closed = True

    def write(self, work: Callable[[MemoryRows], T]) -> T:
        shared = self._shared
        with shared.lock:
            committed = shared.tables
            view = _Tables(dict(committed.rows), dict(committed.unique), dict(committed.counters))
            result = work(MemoryRows(view, writable=True))
            shared.tables = view
            return result

    def read(self, work: Callable[[MemoryRows], T]) -> T:
        return work(MemoryRows(self._shared.tables, writable=False))

    def stream(self, work: Callable[[MemoryRows], Iterator[T]]) -> Iterator[T]:
        yield from work(MemoryRows(self._shared.tables, writable=False))  # the tables committed now

    def scrub(self) -> Traces:
        """A memory store keeps no file: what remains of deleted messages is their vectors."""
        self._shared.meaning.keep_only({key[0] for key in self._shared.tables.rows["messages"]})
        return Traces()

    def release_space(self) -> int:
        """A memory store has no file: what a removal frees is Python's."""
        return 0

    def footprint(self) -> tuple[int, int]:
        """A memory store has no file and no log of its own."""
        return 0, 0

    def check(self, logical: Callable[[MemoryRows, int, VerifyReport], None]) -> VerifyReport:
        """The checks over rows only: a memory store has no file or derived index to damage."""
        report = VerifyReport()
        tables = self._shared.tables
        logical(MemoryRows(tables, writable=False), tables.counters["token"], report)
        return report

    def search(self, query: cmd.Search) -> list[SearchHit]:
        return self.read(lambda rows: search(rows, query))

    def recall(self, query: cmd.Search) -> list[SearchHit]:
        meaning = self._shared.meaning if self._embedder is not None else None
        return self.read(lambda rows: recall(rows, query, meaning, self._embedder))

    def rebuild_vectors(self) -> int:
        meaning = self._shared.meaning
        meaning.forget()
        if self._embedder is None:
            return 0
        return self.read(lambda rows: meaning.compute(self._embedder, _scanned(rows, _EVERY)[0]))


# --- search: a scan of the messages, newest first --------------------------------------------

_WORDS = re.compile(r"[^\W_]+")


def _text(row: Row) -> str:
    """A message's searched text: its content, or the text of its parts (tool output's start)."""
    text = row["content"]
    if text is None and row["parts"]:
        parts = json.loads(row["parts"])
        text = "\n".join(p if isinstance(p, str) else p.get("text") for p in parts
                         if isinstance(p, str) or (isinstance(p, dict) and isinstance(p.get("text"), str)))
    text = text or ""
    return text[:TOOL_TEXT_LIMIT] if row["role"] == "tool" else text


def _occurrences(term: Term, words: list[str], folded: str, substring: bool) -> int:
    """How often `term` occurs: a substring in the folded text, or its words in a row
    among the text's words (the last one as a prefix for a prefix term)."""
    if substring:
        return folded.count(fold(term.text)) if term.text else 0
    wanted = _WORDS.findall(fold(term.text))
    if not wanted:
        return 0
    n = len(wanted)
    found = 0
    for at in range(len(words) - n + 1):
        if words[at:at + n - 1] == wanted[:-1] and (
                words[at + n - 1].startswith(wanted[-1]) if term.prefix else words[at + n - 1] == wanted[-1]):
            found += 1
    return found


def _score(query: Query, text: str) -> float | None:
    """How well `text` matches (occurrences of the matched terms), None if it does not."""
    folded = fold(indexable(text))  # as the engines' indexes are given it
    words = [] if query.substring else _WORDS.findall(folded)
    if any(_occurrences(t, words, folded, query.substring) for t in query.excluded):
        return None
    score = 0
    for group in query.groups:
        found = sum(_occurrences(t, words, folded, query.substring) for t in group)
        if not found:
            return None
        score += found
    return float(score)


def _scanned(rows: MemoryRows, query: cmd.Search) -> tuple[list[tuple[Row, str]], dict[str, Row]]:
    """The messages a search or recall looks at (newest first, with their searched text)
    after its filters, and the sessions by id."""
    sessions = {s["id"]: s for s in rows.select("sessions")}
    where: dict[str, Any] = {}
    if query.session_ids is not None:
        where["session_id"] = one_of(query.session_ids)
    if query.role is not None:
        where["role"] = query.role
    kept = []
    for row in rows.select("messages", where, order=["-id"]):
        session = sessions[row["session_id"]]
        if row["state"] == "rewound" or (query.role is None and not query.include_tools and row["role"] == "tool"):
            continue
        if query.profile is not None and (session["profile"] or "main") != query.profile:
            continue
        if query.source is not None and session["source"] != query.source:
            continue
        if query.user_id is not None and session["user_id"] != query.user_id:
            continue
        if (query.since is not None and row["timestamp"] < query.since) or (
                query.until is not None and row["timestamp"] >= query.until):
            continue
        kept.append((row, _text(row)))
    return kept, sessions


def _hit(row: Row, sessions: dict[str, Row], snippet: str, score: float, found: str = "words") -> SearchHit:
    session = sessions[row["session_id"]]
    return SearchHit(session_id=row["session_id"], message_id=row["id"], uid=row["uid"], role=row["role"],
                     timestamp=row["timestamp"], snippet=snippet, score=score, state=row["state"],
                     session_title=session["title"], session_source=session["source"], found_by=found)


def search(rows: MemoryRows, query: cmd.Search) -> list[SearchHit]:
    """The hits of `query` among the stored messages: the RANK_WINDOW newest matches, the
    most occurrences first (a CJK substring: the densest), then the newest; another
    substring, or one shorter than a trigram, is a scan, newest first, scored 0."""
    parsed = query.query
    if parsed.empty:
        return []
    scanned, sessions = _scanned(rows, query)
    # CJK substrings of a trigram or more are ranked by how densely they occur, as the
    # engines' trigram indexes (of CJK text) rank them; any other substring is a scan, unranked.
    dense = parsed.substring and all(len(t.text) >= 3 and list(cjk_runs(t.text)) == [t.text]
                                     for group in parsed.groups for t in group)
    matches: list[tuple[float, Row, str]] = []
    for row, text in scanned:
        score = _score(parsed, text)
        if score is None and query.include_reasoning and not parsed.substring and row["reasoning"]:
            score = _score(parsed, row["reasoning"])  # found in its reasoning: the snippet is cut there
            text = row["reasoning"] if score is not None else text
        if score is not None:
            if parsed.substring:
                score = score / max(len(text), 1) if dense else 0.0
            matches.append((score, row, text))
            if len(matches) == RANK_WINDOW:
                break
    matches.sort(key=lambda m: (-m[0], -m[1]["id"]))
    return [_hit(row, sessions, like_snippet(text, parsed.needles), score) for score, row, text in matches[: query.limit]]


def _stem(word: str) -> str:
    """A word without the English endings that most often part it from its kin (the
    engines stem by Porter or Snowball; a scan settles for this)."""
    for ending in ("ing", "ed"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def recall(rows: MemoryRows, query: cmd.Search, meaning: _Meaning | None = None,
           embedder: Embedder | None = None) -> list[SearchHit]:
    """The best messages for a question (query.query is a recall.Recall), best first: any
    of its words (stemmed) or trigrams, a rarer one counting for more, then the neighbours'
    shares and the question's time, fused with the messages nearest its meaning where it
    has one (sessiondb.recall)."""
    question: Recall = query.query
    if question.empty and question.meaning is None:
        return []
    scanned, sessions = _scanned(rows, query)
    near, why = {}, None
    if question.meaning is not None and meaning is not None and embedder is not None:
        near, why = meaning.nearest(embedder, question, scanned)
    stems = {_stem(w) for w in question.words}
    found: dict[int, Counter] = {}
    for row, text in scanned:
        folded = fold(indexable(text))
        hits = Counter(stem for stem in map(_stem, _WORDS.findall(folded)) if stem in stems)
        hits.update({t: folded.count(t) for t in question.trigrams if t in folded})
        if hits:
            found[row["id"]] = hits
    if not found and not near:
        return []
    held = Counter(term for hits in found.values() for term in hits)  # how many messages hold each
    if len(scanned) > COMMON_MESSAGES:  # a common word only adds to the matches of the rarer ones
        rare = rarer({w: held[_stem(w)] for w in question.words}, len(scanned))[0]
        making = {_stem(w) for w in rare} | set(question.trigrams)
        found = {mid: hits for mid, hits in found.items() if not making.isdisjoint(hits)}
    scores = {mid: sum(n * math.log(1 + len(scanned) / held[term]) for term, n in hits.items())
              for mid, hits in found.items()}
    sources = dict(best(scores, SPREAD_FROM))
    by_id = {row["id"]: (row, text) for row, text in scanned}
    order: dict[str, list[int]] = {}
    for row, _ in reversed(scanned):
        order.setdefault(row["session_id"], []).append(row["id"])
    neighbours = {}
    for mid in sources:
        ids = order[by_id[mid][0]["session_id"]]
        at = ids.index(mid)
        neighbours[mid] = (ids[at - 1] if at else None, ids[at + 1] if at + 1 < len(ids) else None)
    times = {mid: by_id[mid][0]["timestamp"] for mid in sources}
    lexical = favour(spread(sources, neighbours), times, question)
    ranked = best(fuse(lexical, near), query.limit)
    hits = [_hit(by_id[mid][0], sessions, like_snippet(by_id[mid][1], question.needles), score,
                 found_by(mid, lexical, near)) for mid, score in ranked]
    return hits if why is None else [replace(hit, note=why) for hit in hits]


#: Every message a rebuild computes a vector for (the filters of no search).
_EVERY = cmd.Search(query=Recall((), ()), profile=None, source=None, user_id=None, session_ids=None, role=None,
                    since=None, until=None, include_tools=True, include_reasoning=False, limit=1)


def open_backend(target: str, *, profile: str | None, embedder: Embedder | None = None,
                 **options: Any) -> MemoryBackend:
    """A handle on the memory store `target` names (memory://NAME; other options are
    ignored: durability and patience mean nothing to a store in memory)."""
    parts = urlsplit(target)
    return MemoryBackend(unquote(parts.netloc + parts.path), profile=profile, embedder=embedder)


def forget(target: str) -> None:
    """Drop the tables of the memory store `target` names (every profile of it), as deleting
    a file would (sessiondb.testing drops a test's stores so)."""
    parts = urlsplit(target)
    name = unquote(parts.netloc + parts.path)
    with _stores_lock:
        for key in [k for k in _stores if k[0] == name]:
            del _stores[key]
