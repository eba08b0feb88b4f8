"""Rows (store/rows.py) on an SQL connection: the statements written once, for SQLite and PostgreSQL.

Both engines speak the same SQL for everything a unit of work asks of its rows: the
statements are built here from the declared tables (rows.TABLES), never from a caller's
text, with every value bound. What differs is genuine dialect and lives in a `Dialect`:
the parameter mark, how a row is locked, where the fencing tokens come from, the column
that holds insertion order, what a duplicate key raises, and the text an engine cannot
hold as given, encoded on the way in and decoded on the way out (`to_stored`, `to_server`:
the last section).

Inserts are `INSERT ... ON CONFLICT DO NOTHING RETURNING`: a duplicate never aborts the
transaction (it would on PostgreSQL), so a unit of work may meet `Taken` and go on. A
batch that met one without `skip_taken` takes back the rows it inserted before raising,
so a failed insert leaves no partial rows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from ..inputs import NewMessage
from ..model import Message, MessageState, is_activity, message_of
from .rows import INSERTED, TABLES, UNIQUE, Condition, Row, Rows, Table, Taken, Where, one_of

Codec = Callable[[Any], Any]
#: A session's activity time (Rows.recent), and the column both engines' schemas hold its
#: minute in, floor(time / 60) (SQLite's migration 0009, PostgreSQL's 0006), indexed.
_ACTIVE = "coalesce(last_activity_at, started_at)"
_MINUTE = "active_minute"


@dataclass(frozen=True, eq=False)
class Dialect:
    """What one SQL engine spells its own way (see the module docstring)."""

    name: str
    mark: str  # the parameter placeholder
    lock: str  # appended to a SELECT whose rows stay as read until the transaction ends
    next_token: str  # a statement whose one value is the next fencing token
    inserted: Mapping[str, str]  # table -> the column holding its insertion order
    duplicate: Callable[[BaseException], bool]  # whether a driver error is a duplicate key
    #: (table, column) -> (to the engine, from the engine), for text the engine cannot hold as given.
    codecs: Mapping[tuple[str, str], tuple[Codec, Codec]] = field(default_factory=dict)
    #: a failed UPDATE aborts the transaction unless it ran inside a savepoint.
    update_needs_savepoint: bool = False
    #: rows.folded's test, with `{col}` and `{value}` (each `{value}` one bound parameter).
    folded: str = "{col} = {value} COLLATE NOCASE"
    #: appended to `FROM sessions` in `recent`: the minute's index named, where the engine's
    #: planner would not choose an index that serves only the first term of the order itself.
    recent_index: str = ""

    def column(self, table: str, name: str) -> str:
        """The SQL spelling of a column of `table` (INSERTED: the engine's insertion order)."""
        if name == INSERTED:
            if table not in self.inserted:
                raise ValueError(f"{table} keeps no insertion order")
            return self.inserted[table]
        if name not in _table(table).columns:
            raise ValueError(f"{table} has no column {name!r}")
        return f'"{name}"'


class SQLRows:
    """One transaction's rows on `conn` (an APSW or psycopg connection) in `dialect`."""

    def __init__(self, conn: Any, dialect: Dialect) -> None:
        self._conn = conn
        self._dialect = dialect

    # --- reading ------------------------------------------------------------------------

    def select(self, table: str, where: Where = {}, *, columns: Sequence[str] | None = None,
               order: Sequence[str] = (), limit: int | None = None, lock: bool = False) -> list[Row]:
        names = tuple(columns) if columns is not None else _table(table).columns
        params = self._params(table, where)
        text = _select_text(self._dialect, table, names, _shape(table, where), tuple(order), limit is not None, lock)
        if limit is not None:
            params.append(int(limit))
        decoders = _decoders(self._dialect, table, names)
        if not decoders:
            return [dict(zip(names, row)) for row in self._conn.execute(text, params)]
        found = []
        for row in self._conn.execute(text, params):
            got = dict(zip(names, row))
            for name, decode in decoders:
                got[name] = decode(got[name])
            found.append(got)
        return found

    def count(self, table: str, where: Where = {}, *, sums: Sequence[str] = (),
              by: str | None = None) -> dict[Any, Row]:
        d = self._dialect
        params = self._params(table, where)
        totals = "".join(f", coalesce(sum({d.column(table, c)}), 0)" for c in sums)
        group = d.column(table, by) if by is not None else "NULL"
        clause = _where_text(d, table, _shape(table, where))
        text = f"SELECT {group}, count(*){totals} FROM {_table(table).name}{clause}"
        if by is not None:
            text += f" GROUP BY {group}"
        return {row[0]: {"count": row[1], **{c: _number(v) for c, v in zip(sums, row[2:])}}
                for row in self._conn.execute(text, params)}

    def recent(self, where: Where = {}, *, since: float | None = None, until: float | None = None,
               after: tuple[float, str] | None = None, limit: int) -> list[Row]:
        """See Rows.recent. Both engines index the activity's minute rather than the activity
        time (an append's update of its session row then leaves the index as it was, HOT on
        PostgreSQL, and the minute moves once a minute), so the page is ordered by the minute
        first, which is the same order since the minute only grows with the time, and the
        minute is bounded too, so its index serves the page."""
        d = self._dialect
        names = _table("sessions").columns
        params = self._params("sessions", where)
        terms = []
        for exact, on_minute, bound in ((">=", ">=", since), ("<", "<=", until)):
            if bound is not None:
                # the minute's bound is implied by the exact one; the index serves it
                terms += [f"{_ACTIVE} {exact} {d.mark}", f"{_MINUTE} {on_minute} floor({d.mark} / 60)"]
                params += [bound, bound]
        if after is not None:
            active, sid = after
            terms.append(f"{_MINUTE} <= floor({d.mark} / 60)")
            params.append(active)
            terms.append(f"({_ACTIVE}, id) < ({d.mark}, {d.mark})")
            params += [active, sid]
        clause = _where_text(d, "sessions", _shape("sessions", where))
        if terms:
            clause += (" AND " if clause else " WHERE ") + " AND ".join(terms)
        text = (f"SELECT {', '.join(d.column('sessions', c) for c in names)} FROM sessions{d.recent_index}{clause} "
                f"ORDER BY {_MINUTE} DESC, {_ACTIVE} DESC, id DESC LIMIT {d.mark}")
        return [dict(zip(names, row)) for row in self._conn.execute(text, [*params, int(limit)])]

    # --- writing ------------------------------------------------------------------------

    def insert(self, table: str, rows: Sequence[Row], *, skip_taken: bool = False) -> list[int | None]:
        spec = _table(table)
        ids: list[int | None] = []
        inserted: list[Row] = []  # to take back if a row is taken
        start = 0
        while start < len(rows):  # one statement per run of rows naming the same columns
            names = tuple(rows[start])
            end = start + 1
            while end < len(rows) and tuple(rows[end]) == names:
                end += 1
            run = rows[start:end]
            got = self._insert_run(spec, names, run)
            inserted.extend(row for row, i in zip(run, got) if i is not None)
            if None in got and not skip_taken:
                taken = next(row for row, i in zip(run, got) if i is None)
                constraint = self._taken_constraint(table, taken)
                match = _match_columns(spec, names)
                for row in inserted:
                    self.delete(table, {c: row[c] for c in match})
                raise Taken(table, constraint)
            ids.extend(got)
            start = end
        return ids

    def _insert_run(self, spec: Table, names: tuple[str, ...], rows: Sequence[Row]) -> list[int | None]:
        """Insert rows that name the same columns in one statement; each one's id, None where taken."""
        match, returned = _matched(spec, names)
        encoders = _encoders(self._dialect, spec.name, names)
        if encoders:
            values = [v if f is None else f(v) for row in rows for v, f in zip(row.values(), encoders)]
        else:
            values = [v for row in rows for v in row.values()]
        text = _insert_text(self._dialect, spec.name, names, len(rows), returned)
        skip = len(returned) - len(match)
        stored = {tuple(r[skip:]): (r[0] if spec.serial else 0) for r in self._conn.execute(text, values)}
        # a key given twice in one batch is inserted once: its first row's
        if len(match) == 1:
            (key,) = match
            return [stored.pop((row[key],), None) for row in rows]
        return [stored.pop(tuple(row[c] for c in match), None) for row in rows]

    def update(self, table: str, where: Where, *, set: Row | None = None, add: Row | None = None,
               greatest: Row | None = None) -> int:
        set, add, greatest = set or {}, add or {}, greatest or {}
        if not (set or add or greatest):
            return len(self.select(table, where, columns=_table(table).key))
        codecs = self._dialect.codecs
        params: list[Any] = [_encoded(codecs, table, c, v) for c, v in set.items()]
        params.extend(add.values())
        for v in greatest.values():
            params.extend((v, v))
        params.extend(self._params(table, where))
        text = _update_text(self._dialect, table, tuple(set), tuple(add), tuple(greatest), _shape(table, where))
        guarded = self._dialect.update_needs_savepoint and _touches_unique(table, set)
        try:
            if guarded:
                self._conn.execute("SAVEPOINT sessiondb_update")
            changed = _changes(self._conn, text, params)
            if guarded:
                self._conn.execute("RELEASE SAVEPOINT sessiondb_update")
            return changed
        except Exception as exc:
            if not self._dialect.duplicate(exc):
                raise
            if guarded:
                self._conn.execute("ROLLBACK TO SAVEPOINT sessiondb_update")
                self._conn.execute("RELEASE SAVEPOINT sessiondb_update")
            raise Taken(table, _constraint_named(table, exc)) from None

    def delete(self, table: str, where: Where) -> int:
        params = self._params(table, where)
        clause = _where_text(self._dialect, table, _shape(table, where))
        return _changes(self._conn, f"DELETE FROM {_table(table).name}{clause}", params)

    def next_token(self) -> int:
        return int(list(self._conn.execute(self._dialect.next_token))[0][0])

    # --- pieces -------------------------------------------------------------------------

    def _params(self, table: str, where: Where) -> list[Any]:
        """The values `where` binds, in the order _where_text marks them."""
        codecs = self._dialect.codecs
        params: list[Any] = []
        for name, wanted in where.items():
            if wanted is None or _word(table, name, wanted):
                continue
            if not isinstance(wanted, Condition):
                params.append(_encoded(codecs, table, name, wanted) if codecs else wanted)
            elif wanted.op == "in":
                params.extend(_encoded(codecs, table, name, v) for v in wanted.value)
            elif wanted.op == "prefix":
                params.extend((len(wanted.value), wanted.value))
            elif wanted.op == "folded":
                params.extend([wanted.value] * self._dialect.folded.count("{value}"))
            else:
                params.append(_encoded(codecs, table, name, wanted.value))
        return params

    def _taken_constraint(self, table: str, row: Row) -> str:
        """Which of the table's key or unique columns a row left out of an insert met."""
        spec = _table(table)
        candidates = [("key", spec.key)] + [(n, cols) for n, (t, cols) in UNIQUE.items() if t == table]
        for name, cols in candidates:
            if all(c in row for c in cols) and self.select(table, {c: row[c] for c in cols}, columns=cols, limit=1):
                return name
        return "key"


Shape = tuple[tuple[str, str, int | str], ...]


#: Columns that hold one of a few fixed words, compared in a statement as a literal rather
#: than a bound value: the planner then chooses a partial index on such a word when it
#: prepares the statement (messages_active, the rows whose state is 'active'), once. With a
#: bound value SQLite chooses by the value bound and prepares the statement again whenever
#: another is bound; the store's connections forbid that (QPSG, sqlite/connect.py), which
#: leaves the index unused, as PostgreSQL's generic plan would.
_WORDS = {("messages", "state"): frozenset(s.value for s in MessageState)}


def _shape(table: str, where: Where) -> Shape:
    """What a condition's SQL depends on: each column, its operator, and how many values it
    lists (or, for a column of fixed words, the word)."""
    shape: list[tuple[str, str, int | str]] = []
    for name, w in where.items():
        if w is None:
            shape.append((name, "null", 0))
        elif _word(table, name, w):
            shape.append((name, "word", w))
        elif isinstance(w, Condition):
            shape.append((name, w.op, len(w.value) if w.op == "in" else 0))
        else:
            shape.append((name, "=", 0))
    return tuple(shape)


def _word(table: str, name: str, value: Any) -> bool:
    return isinstance(value, str) and value in _WORDS.get((table, name), ())


@lru_cache(maxsize=512)
def _where_text(d: Dialect, table: str, shape: Shape) -> str:
    terms = []
    for name, op, arg in shape:  # arg: how many values an "in" lists; a "word", the word
        col = d.column(table, name)
        if op == "null":
            terms.append(f"{col} IS NULL")
        elif op == "in":
            terms.append(f"{col} IN ({', '.join([d.mark] * arg)})" if arg else "1 = 0")
        elif op == "prefix":  # exact: no pattern characters, whatever the prefix holds
            terms.append(f"substr({col}, 1, {d.mark}) = {d.mark}")
        elif op == "folded":
            terms.append(d.folded.format(col=col, value=d.mark))
        elif op == "word":
            if arg not in _WORDS[(table, name)]:  # only ever one of _WORDS' own, never a caller's text
                raise ValueError(f"{arg!r} is not a word of {table}.{name}")
            terms.append(f"{col} = '{arg}'")
        else:
            terms.append(f"{col} {'<>' if op == '!=' else op} {d.mark}")
    return " WHERE " + " AND ".join(terms) if terms else ""


@lru_cache(maxsize=512)
def _select_text(d: Dialect, table: str, names: tuple[str, ...], shape: Shape, order: tuple[str, ...],
                 limited: bool, lock: bool) -> str:
    text = f"SELECT {', '.join(d.column(table, c) for c in names)} FROM {_table(table).name}"
    text += _where_text(d, table, shape)
    if order:
        text += " ORDER BY " + ", ".join(
            d.column(table, o[1:]) + " DESC" if o.startswith("-") else d.column(table, o) for o in order)
    if limited:
        text += f" LIMIT {d.mark}"
    return text + (d.lock if lock else "")


@lru_cache(maxsize=256)
def _update_text(d: Dialect, table: str, set_: tuple[str, ...], add: tuple[str, ...], greatest: tuple[str, ...],
                 shape: Shape) -> str:
    changes = [f"{d.column(table, c)} = {d.mark}" for c in set_]
    changes += [f"{d.column(table, c)} = {d.column(table, c)} + {d.mark}" for c in add]
    for c in greatest:
        col = d.column(table, c)
        changes.append(f"{col} = CASE WHEN {col} IS NULL OR {col} < {d.mark} THEN {d.mark} ELSE {col} END")
    return f"UPDATE {_table(table).name} SET {', '.join(changes)}{_where_text(d, table, shape)}"


@lru_cache(maxsize=256)
def _decoders(d: Dialect, table: str, names: tuple[str, ...]) -> tuple[tuple[str, Codec], ...]:
    """The columns of `names` read back through a codec, with its decoder."""
    return tuple((c, d.codecs[(table, c)][1]) for c in names if (table, c) in d.codecs)


@lru_cache(maxsize=256)
def _encoders(d: Dialect, table: str, names: tuple[str, ...]) -> tuple[Codec | None, ...]:
    """Each column's encoder (None: as given), or () when no column of `names` has one."""
    found = tuple(d.codecs[(table, c)][0] if (table, c) in d.codecs else None for c in names)
    return found if any(found) else ()


def _encoded(codecs: Mapping[tuple[str, str], tuple[Codec, Codec]], table: str, column: str, value: Any) -> Any:
    pair = codecs.get((table, column)) if codecs else None
    return value if pair is None else pair[0](value)


def _table(name: str) -> Table:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"no table {name!r}") from None


@lru_cache(maxsize=256)
def _matched(spec: Table, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The columns that tell an insert's rows apart, and those its RETURNING names (the
    serial first, when the table has one)."""
    match = _match_columns(spec, names)
    returned = ((spec.serial,) if spec.serial else ()) + tuple(c for c in match if c != spec.serial)
    return match, returned


def _match_columns(spec: Table, names: tuple[str, ...]) -> tuple[str, ...]:
    """The columns that tell an inserted row from the others: the key if given, else a
    unique constraint's columns."""
    if all(c in names for c in spec.key):
        return spec.key
    for table, cols in UNIQUE.values():
        if table == spec.name and all(c in names for c in cols):
            return cols
    raise ValueError(f"an insert into {spec.name} names its key or unique columns")


def _touches_unique(table: str, set_: Row) -> bool:
    spec = _table(table)
    unique = set(spec.key).union(*(cols for t, cols in UNIQUE.values() if t == table))
    return any(c in unique for c in set_)


def _constraint_named(table: str, exc: BaseException) -> str:
    """UNIQUE's name for a duplicate-key error, from PostgreSQL's constraint name or
    SQLite's 'UNIQUE constraint failed: table.col, ...'."""
    diag = getattr(exc, "diag", None)
    named = getattr(diag, "constraint_name", None)
    if named in UNIQUE:
        return named
    text = str(exc)
    for name, (t, cols) in UNIQUE.items():
        if t == table and text.endswith(", ".join(f"{t}.{c}" for c in cols)):
            return name
    return "key"


@lru_cache(maxsize=256)
def _insert_text(d: Dialect, table: str, names: tuple[str, ...], count: int, returned: tuple[str, ...]) -> str:
    one = "(" + ", ".join([d.mark] * len(names)) + ")"
    return (f"INSERT INTO {table}({', '.join(d.column(table, c) for c in names)}) VALUES "
            f"{', '.join([one] * count)} ON CONFLICT DO NOTHING "
            f"RETURNING {', '.join(d.column(table, c) for c in returned)}")


def _changes(conn: Any, text: str, params: list[Any]) -> int:
    """Run a statement that changes rows; how many it changed."""
    cursor = conn.execute(text, params)
    return int(conn.changes()) if hasattr(conn, "changes") else int(cursor.rowcount)  # APSW, psycopg


def _number(total: Any) -> int | float:
    """A sum as Python's number (PostgreSQL sums integers as numeric)."""
    return total if isinstance(total, (int, float)) else (int(total) if total == int(total) else float(total))


# --- text as an engine holds it --------------------------------------------------------
#
# Message text as a store holds it: every Unicode string, kept exactly, as valid UTF-8.
#
# sessiondb takes any Python text as a message's content, reasoning, parts or tool calls and
# gives back exactly what it took, two characters included that an engine cannot hold:
# a NUL, which PostgreSQL text cannot hold, and half a character (an unpaired surrogate, as
# a string cut inside an emoji leaves, or JSON's "\ud83d"), which has no UTF-8 form at
# all. So on the way to the engine:
#
# - ESCAPE itself (U+FFFE, a noncharacter no text is expected to hold) is doubled;
# - a NUL becomes ESCAPE + "0" (PostgreSQL only: SQLite holds a NUL as it is);
# - an unpaired surrogate becomes ESCAPE + "u" + its four hex digits + ESCAPE (closed by
#   ESCAPE, which no word holds, so the words on either side stay words of their own and
#   are found by search);
#
# and on the way back the sequences are undone. Text without either character, which is
# all of it in practice, passes through untouched (`_whole`). A JSON
# column (parts, tool calls) goes through the same codec as text: its surrogates and ESCAPE
# can only be inside its strings, and JSON writes a NUL as \u0000.

ESCAPE = "\ufffe"
#: The columns of `messages` that hold text through this codec.
ESCAPED_COLUMNS = ("content", "reasoning", "parts", "tool_calls")
_SPECIAL = re.compile("[\ufffe\ud800-\udfff]")  # in a str, a surrogate is always unpaired
_SPECIAL_OR_NUL = re.compile("[\x00\ufffe\ud800-\udfff]")
_ESCAPED = re.compile(ESCAPE + "(?:([\ufffe0])|u([0-9a-f]{4})" + ESCAPE + ")")


def _escaped(found: re.Match[str]) -> str:
    char = found.group()
    if char == ESCAPE:
        return ESCAPE + ESCAPE
    if char == "\x00":
        return ESCAPE + "0"
    return f"{ESCAPE}u{ord(char):04x}{ESCAPE}"


def _undone(found: re.Match[str]) -> str:
    char, surrogate = found.groups()
    if surrogate is not None:
        return chr(int(surrogate, 16))
    return "\x00" if char == "0" else ESCAPE


def _whole(text: str) -> bool:
    """Neither ESCAPE nor half a character in `text`: told by a scan for one character and
    UTF-8's own refusal of a surrogate, each a C loop, where the expression's scan costs
    four times as much (the common case of every non-ASCII text)."""
    if ESCAPE in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def to_stored(text: str | None) -> str | None:
    """`text` as SQLite holds it: valid UTF-8, NUL kept."""
    if text is None or text.isascii() or _whole(text):
        return text
    return _SPECIAL.sub(_escaped, text)


def to_server(text: str | None) -> str | None:
    """`text` as PostgreSQL holds it: valid UTF-8 without NUL."""
    if text is None or ("\x00" not in text and (text.isascii() or _whole(text))):
        return text
    return _SPECIAL_OR_NUL.sub(_escaped, text)


def from_stored(text: str | None) -> str | None:
    """The text `to_stored` or `to_server` made `text` of. A piece of such text (a snippet
    cut from it) is undone where its sequences are whole."""
    if text is None or ESCAPE not in text:
        return text
    return _ESCAPED.sub(_undone, text)


# --- a new message's row --------------------------------------------------------------------
#
# What the rules' append (store/lineage.py) and each engine's own way to store its common
# case (SQLiteBackend.write_append, PostgreSQL's append_fresh) share: a new message's row,
# the Message read back from a stored one, and what a batch adds to its session.

#: The columns of `message_row`'s row, in its order (a stored row has its id first).
MESSAGE_COLUMNS = ("session_id", "uid", "seq", "role", "content", "parts", "tool_calls", "tool_call_id", "tool_name",
                   "reasoning", "finish_reason", "token_count", "timestamp", "display_kind", "state")
_ACTIVE_STATE = MessageState.ACTIVE.value
ROWS_PER_STATEMENT = 500  # message rows one statement inserts or names at most (15 values each)


def message_row(session_id: str, m: NewMessage, seq: int, now: float,
                encode: Callable[[str | None], str | None] = to_stored) -> tuple[Any, ...]:
    """The row storing `m` as message `seq` of the session (MESSAGE_COLUMNS), stamped `now`
    if it has no time, its text as the engine holds it (`encode`: to_stored, to_server)."""
    return (session_id, m.uid, seq, m.role, encode(m.content), encode(m.parts), encode(m.tool_calls), m.tool_call_id,
            m.tool_name, encode(m.reasoning), m.finish_reason, m.token_count,
            now if m.timestamp is None else m.timestamp, m.display_kind, m.state)


def stored_message(row: Sequence[Any]) -> Message:
    """The Message of a stored row: its id, then MESSAGE_COLUMNS."""
    (mid, sid, uid, seq, role, content, parts, tool_calls, tool_call_id, tool_name,
     reasoning, finish_reason, token_count, timestamp, display_kind, state) = row
    return message_of((
        mid, sid, uid, seq, role,
        json.loads(from_stored(parts)) if parts is not None else from_stored(content),
        json.loads(from_stored(tool_calls)) if tool_calls is not None else None,
        tool_call_id, tool_name, from_stored(reasoning), finish_reason, token_count, timestamp, display_kind, state,
    ))


def insert_new_messages(conn: Any, d: Dialect, rows: Sequence[Sequence[Any]]) -> dict[str, int] | None:
    """Insert `rows` (message_row's), ROWS_PER_STATEMENT a statement: the id of each, by uid;
    None, the rows inserted taken back, when a uid was stored already or given twice."""
    ids: dict[str, int] = {}
    for start in range(0, len(rows), ROWS_PER_STATEMENT):
        part = rows[start:start + ROWS_PER_STATEMENT]
        text = _insert_text(d, "messages", MESSAGE_COLUMNS, len(part), ("id", "uid"))
        ids.update((uid, mid) for mid, uid in conn.execute(text, [v for r in part for v in r]))
    if len(ids) == len(rows):
        return ids
    taken, back = list(ids.values()), SQLRows(conn, d)
    for start in range(0, len(taken), ROWS_PER_STATEMENT):
        back.delete("messages", {"id": one_of(taken[start:start + ROWS_PER_STATEMENT])})
    return None


def session_added(batch: Sequence[NewMessage], times: Sequence[float]) -> tuple[int, int, float | None]:
    """What `batch`, stamped `times`, adds to its session: its active messages, their tool
    calls, and the newest activity time among them (None without one)."""
    active = calls = 0
    activity: float | None = None
    for m, time in zip(batch, times):
        if m.state == _ACTIVE_STATE:
            active += 1
            calls += m.tool_call_total
            if is_activity(m.role, m.display_kind) and (activity is None or time > activity):
                activity = time
    return active, calls, activity


def add_to_session(rows: Rows, session_id: str, batch: Sequence[NewMessage], times: Sequence[float]) -> None:
    """Add the messages of `batch` just stored (stamped `times`) to their session's counters
    and activity (`session_added`)."""
    active, calls, activity = session_added(batch, times)
    if active:
        rows.update("sessions", {"id": session_id}, add={"message_count": active, "tool_call_count": calls},
                    greatest=None if activity is None else {"last_activity_at": activity})

