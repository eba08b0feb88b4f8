"""Reading one table of a damaged database as far as it can be read (S-23): recover.py's
reader, run on a private scratch copy of the damaged file.

A rowid table is read in rowid order until it fails, then from the other end backwards
until it fails; when one of its indexes survived, every rowid the index lists is fetched
by itself; otherwise the unreadable span between is bisected into rowid ranges
(`WHERE rowid BETWEEN a AND b`) and every range that still reads is kept, within a query
budget per table. A WITHOUT ROWID table (usage) is read in key order as far as it goes.
Every row read is handed to the caller's `keep`, which stores it (or refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import apsw

MIN_ROWID, MAX_ROWID = -(2 ** 63), 2 ** 63 - 1
QUERY_BUDGET = 4000  # range queries per table before the rest is given up as lost


@dataclass
class TableSalvage:
    kept: int = 0
    lost_ranges: list[tuple[int, int]] = field(default_factory=list)  # rowid spans that could not be read
    lost_estimate: int = 0  # rowids inside bounded lost spans (ids are dense, so ~rows)
    unbounded: bool = False  # rows past the last readable one may exist but could not be reached
    skipped: int = 0  # rows read but already stored (duplicates)
    invalid: int = 0  # rows read but refused by the new store's types and checks (garbage)
    expected: int | None = None  # the row count the table's smallest index claims, when readable
    error: str | None = None


def salvage(conn: apsw.Connection, table: str, cols: list[str], has_rowid: bool,
            keep: Callable[[tuple], bool]) -> TableSalvage:
    """Hand every readable row of `table` (its `cols`) to `keep`; what was kept and lost."""
    reader = _Reader(conn, table, cols, keep)
    if not has_rowid:
        return reader.in_key_order()
    reader.count_expected()
    last, failed = reader.scan(MIN_ROWID, MAX_ROWID)
    if not failed and reader.complete():
        return reader.finish()
    lo = MIN_ROWID if last is None else last + 1
    first = reader.scan(lo, MAX_ROWID, descending=True)[0] if failed else None
    listed = _rowids_from_indexes(conn, table)
    if listed is not None:
        return reader.fetch_each(listed)
    if failed:
        reader.explore_gap(lo, first)
    return reader.finish()


class _Reader:
    """The rows of one table read so far, and the query budget left to read the rest."""

    def __init__(self, conn: apsw.Connection, table: str, cols: list[str], keep: Callable[[tuple], bool]) -> None:
        self.conn, self.table, self.keep = conn, table, keep
        self.select = ", ".join(f'"{c}"' for c in cols)
        self.result = TableSalvage()
        self.budget = QUERY_BUDGET
        self.seen: list[int] = []

    def take(self, row: tuple) -> None:
        try:
            stored = self.keep(row)
        except apsw.Error:  # a row decoded from a garbled page that the new store's types refuse
            self.result.invalid += 1
            return
        if stored:
            self.result.kept += 1
        else:
            self.result.skipped += 1

    def in_key_order(self) -> TableSalvage:
        """A WITHOUT ROWID table: read in key order until it fails."""
        try:
            for row in self.conn.execute(f"SELECT {self.select} FROM {self.table}"):
                self.take(row)
        except apsw.Error as exc:
            self.result.error = f"stopped after {self.result.kept} row(s): {exc}"
            self.result.unbounded = True
        return self.result

    def count_expected(self) -> None:
        try:  # the planner counts through the smallest index, which may have survived the damage
            self.result.expected = self.conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
        except apsw.Error:
            self.result.expected = None

    def complete(self) -> bool:
        return self.result.expected is None or len(self.seen) == self.result.expected

    def scan(self, lo: int, hi: int, descending: bool = False) -> tuple[int | None, bool]:
        """Read rows of [lo, hi] in one direction; (last rowid read, whether it failed)."""
        self.budget -= 1
        order = "DESC" if descending else "ASC"
        last = None
        try:
            for row in self.conn.execute(f"SELECT rowid, {self.select} FROM {self.table} "
                                         f"WHERE rowid BETWEEN ? AND ? ORDER BY rowid {order}", (lo, hi)):
                rowid = row[0]
                # A garbled page can decode without an error into rows out of order or out
                # of range: that is damage, and nothing from there on is trusted.
                if not lo <= rowid <= hi or (last is not None and (rowid >= last if descending else rowid <= last)):
                    self.result.error = self.result.error or f"rows out of order at rowid {last}"
                    return last, True
                last = rowid
                self.seen.append(last)
                self.take(row[1:])
            return last, False
        except apsw.Error as exc:
            self.result.error = self.result.error or str(exc)
            return last, True

    def fetch_each(self, listed: list[int]) -> TableSalvage:
        """An index that survived lists every rowid: fetch each one not read yet by itself."""
        got = set(self.seen)
        lost = []
        for rowid in listed:
            if rowid in got:
                continue
            try:
                row = self.conn.execute(f"SELECT rowid, {self.select} FROM {self.table} WHERE rowid = ?",
                                        (rowid,)).fetchone()
            except apsw.Error:
                row = None
            if row is not None and row[0] == rowid:
                self.seen.append(rowid)
                self.take(row[1:])
            else:
                lost.append((rowid, rowid))
        self.result.lost_ranges = _merge(lost)
        self.result.lost_estimate = len(lost)
        return self.result

    def explore_gap(self, lo: int, first: int | None) -> None:
        """Bisect the span between the rows read from either end (`first`: the lowest rowid
        read backwards, None when the last page could not be read)."""
        hi = MAX_ROWID if first is None else first - 1
        if first is None:
            # The last page cannot be read, so the highest rowid is unknown: look a
            # reasonable way past the last row read, and say the rest is unknown.
            self.result.unbounded = True
            base = max(self.seen) if self.seen else 0
            hi = base + max(10_000, 4 * self.result.kept)
        self.explore(lo, hi)

    def explore(self, lo: int, hi: int) -> None:
        """Keep every readable row of [lo, hi], which is known to contain damage."""
        while lo <= hi:
            if self.budget <= 0:
                self.result.lost_ranges.append((lo, hi))
                return
            last, failed = self.scan(lo, hi)
            if not failed:
                return
            lo = lo if last is None else last + 1
            first, failed = self.scan(lo, hi, descending=True)
            if not failed:
                return
            hi = hi if first is None else first - 1
            if lo > hi:
                return
            if last is None and first is None:
                if hi - lo < 1 or self.budget <= 0:
                    self.result.lost_ranges.append((lo, hi))
                    return
                mid = lo + (hi - lo) // 2
                self.explore(lo, mid)
                self.explore(mid + 1, hi)
                return

    def finish(self) -> TableSalvage:
        """Merge the lost spans and estimate the rows lost inside them."""
        result, seen = self.result, self.seen
        result.lost_ranges = _merge(result.lost_ranges)
        top = max(seen) if seen else None
        bottom = min(seen) if seen else None
        result.lost_estimate = sum(b - a + 1 for a, b in result.lost_ranges
                                   if bottom is not None and a > bottom and b < top)
        if result.expected is not None:
            result.lost_estimate = max(result.lost_estimate, result.expected - result.kept - result.skipped)
        if result.unbounded:
            result.lost_ranges.append((max(seen) + 1 if seen else 0, MAX_ROWID))
        return result


def _rowids_from_indexes(conn: apsw.Connection, table: str) -> list[int] | None:
    """Every rowid of `table` as listed by its largest readable whole-table index, or None."""
    best: list[int] | None = None
    try:
        indexes = conn.execute("SELECT name, sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?",
                               (table,)).fetchall()
    except apsw.Error:
        return None
    for name, sql in indexes:
        if sql is not None and " WHERE " in sql.upper():
            continue  # a partial index lists only some rows
        try:
            rowids = [r[0] for r in conn.execute(f'SELECT rowid FROM "{table}" INDEXED BY "{name}"')]
        except apsw.Error:
            continue
        if best is None or len(rowids) > len(best):
            best = rowids
    return None if best is None else sorted(set(best))


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if merged and a <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
