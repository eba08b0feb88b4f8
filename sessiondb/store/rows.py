"""Rows in and out within a transaction: the primitives every rule of the store is written on.

The rules a user can observe (which session an append lands on, uids stored once across a
lineage, leases and fencing, compaction and rotation, turns, usage, import and export)
are written once, in the backend-neutral layer, as units of work over a `Rows`: a
transaction's view of the store's tables. A backend implements `Rows` on its engine
(store/sql.py writes the SQL once for the engines that speak it) and runs each unit of
work in one transaction (`Backend.write` / `Backend.read`, store/backend.py).

The tables and their columns are the same on every backend (`TABLES`); a row is a dict of
column -> value as sessiondb gives it (text as given, JSON columns as JSON text, flags as
0/1). A condition (`Where`) maps columns to what they must be: a value (equal; None is
IS NULL), or one of `one_of`, `above`, `below`, `at_least`, `at_most`, `other_than`,
`starting`, `folded`. Every value is bound, never spliced: no text of a caller's becomes SQL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Protocol, Sequence

from ..errors import Conflict

Row = dict[str, Any]
Where = Mapping[str, Any]


@dataclass(frozen=True)
class Table:
    """A table's columns in their stored order, its key, and the integer id a backend assigns
    on insert (None: the key is given)."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    serial: str | None = None


def _table(name: str, columns: str, key: str, serial: str | None = None) -> Table:
    return Table(name, tuple(columns.split()), tuple(key.split()), serial)


TABLES: dict[str, Table] = {t.name: t for t in (
    _table("sessions", "id source profile session_key user_id chat_id chat_type thread_id title model "
                       "parent_session_id started_at ended_at end_reason last_activity_at message_count "
                       "tool_call_count pinned archived hidden metadata parent_relation", "id"),
    _table("messages", "id session_id uid seq role content parts tool_calls tool_call_id tool_name reasoning "
                       "finish_reason token_count timestamp display_kind state", "id", serial="id"),
    _table("usage", "session_id model provider task input_tokens output_tokens cache_read_tokens "
                    "cache_write_tokens reasoning_tokens cost_usd calls", "session_id model provider task"),
    _table("usage_calls", "call_id session_id recorded_at", "call_id"),
    _table("compaction_leases", "session_id token watermark holder pid host boot_id pid_ns pid_start "
                                "ttl acquired_at expires_at", "session_id"),
    _table("turns", "id session_id user_uid cwd started_at ended_at outcome reason detail receipts continued_by",
           "id"),
    _table("gateway_routes", "key session_id profile state turn_started_at updated_at", "key"),
    _table("policies", "key value updated_at", "key"),
)}
#: A column every table of INSERTED_ORDER has besides its own: a number that grows in the
#: order rows were inserted (a session's creation order, a turn's start), for `columns`,
#: `where` and `order`.
INSERTED = "inserted"
INSERTED_ORDER = ("sessions", "messages", "turns")
#: Unique constraints besides each table's key, by the name `Taken` reports.
UNIQUE = {"sessions_title": ("sessions", ("title",)), "messages_uid": ("messages", ("session_id", "uid"))}


def active_at(session: Row) -> float:
    """A session row's activity time: `last_activity_at`, or `started_at` while that is NULL
    (the order `Rows.recent` reads sessions in)."""
    return session["last_activity_at"] if session["last_activity_at"] is not None else session["started_at"]


@dataclass(frozen=True)
class Condition:
    """A column's condition other than equality."""

    op: Literal["in", ">", "<", ">=", "<=", "!=", "prefix", "folded"]
    value: Any


def one_of(values: Iterable[Any]) -> Condition:
    return Condition("in", tuple(values))


def above(value: Any) -> Condition:
    return Condition(">", value)


def below(value: Any) -> Condition:
    return Condition("<", value)


def at_least(value: Any) -> Condition:
    return Condition(">=", value)


def at_most(value: Any) -> Condition:
    return Condition("<=", value)


def other_than(value: Any) -> Condition:
    """Not equal to `value` (a NULL column is not other than anything, as in SQL)."""
    return Condition("!=", value)


def starting(prefix: str) -> Condition:
    """Text that starts with `prefix` (exactly: no pattern characters)."""
    return Condition("prefix", prefix)


def folded(text: str) -> Condition:
    """Text equal to `text` but for the case of ASCII letters (A-Z and a-z); every other
    character as given."""
    return Condition("folded", text)


class Taken(Conflict):
    """An insert met a stored row under the same key or unique columns (`constraint`: the
    table's name for its key, or a key of UNIQUE). The neutral layer says it in a person's words."""

    def __init__(self, table: str, constraint: str) -> None:
        super().__init__(f"{table}: {constraint} taken")
        self.table = table
        self.constraint = constraint


class Rows(Protocol):
    """One transaction's view of the tables (see the module docstring).

    In a write transaction the unit of work sees its own writes; nothing it wrote is seen
    by others before the transaction commits, and a unit of work that raises leaves no
    row behind. A read transaction sees one snapshot throughout.
    """

    def select(self, table: str, where: Where = {}, *, columns: Sequence[str] | None = None,
               order: Sequence[str] = (), limit: int | None = None, lock: bool = False) -> list[Row]:
        """The rows matching `where`, with `columns` (default: all of the table's), in
        `order` (column names; a leading '-' for descending), at most `limit`.

        `lock` (in a write transaction): the rows read stay as read until this transaction
        ends; another writer of the same rows waits for it. A backend whose writes already
        take turns store-wide has nothing more to do."""

    def insert(self, table: str, rows: Sequence[Row], *, skip_taken: bool = False) -> list[int | None]:
        """Insert `rows` in order (a column left out takes its default). Returns each row's
        assigned id (the table's serial; 0 for a table without one). A row whose key or
        unique columns are stored already raises `Taken`, or with `skip_taken` is left
        out and reported as None. Ids of one session's messages grow in commit order."""

    def update(self, table: str, where: Where, *, set: Row | None = None, add: Row | None = None,
               greatest: Row | None = None) -> int:
        """Change the rows matching `where`: `set` columns to values, `add` amounts to
        numeric columns, raise columns to at least a value (`greatest`; a NULL column takes
        the value). Returns how many rows matched. A change to a key or unique column that
        meets a stored row raises `Taken`."""

    def delete(self, table: str, where: Where) -> int:
        """Delete the rows matching `where` (a session takes its messages, usage, usage calls,
        turns and lease with it; its children keep their rows, their parent set to NULL). Returns how
        many rows of `table` went."""

    def count(self, table: str, where: Where = {}, *, sums: Sequence[str] = (),
              by: str | None = None) -> dict[Any, Row]:
        """How many rows match, and the totals of `sums` columns (0 when none match), as
        {None: {"count": n, column: total, ...}}; with `by`, one such row per value of that
        column (only values that occur)."""

    def recent(self, where: Where = {}, *, since: float | None = None, until: float | None = None,
               after: tuple[float, str] | None = None, limit: int) -> list[Row]:
        """Sessions matching `where`, the most recently active first, with every column: by
        their activity time (`last_activity_at`, or `started_at` while that is NULL), then by
        id, both descending. `since` and `until` bound the activity time (since <= time <
        until); `after` is a position in this order (an activity time and an id, where a
        page ended) and only the sessions past it are read. At most `limit` rows.

        The one order the store pages by (a listing of sessions), read the way the engine
        indexes it; `select` cannot order by a time that is one of two columns."""

    def next_token(self) -> int:
        """A fencing token for a compaction lease: larger than every token a committed
        transaction of this store took (one rolled back granted nothing, so its token may
        come again)."""
