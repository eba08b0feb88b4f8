"""Salvage (S-23): rebuild a new store from whatever is readable in a damaged one.

The source is never opened by SQLite and never written: its files (the main file, and
the `-wal` or `-journal` that carry its last commits) are copied byte for byte into a
private scratch directory, and everything else works on the copy. (A read-only,
`immutable=1` open of the source would be the alternative; it ignores the WAL, so the
commits still in it would be lost, and a read-only open cannot patch a zeroed header.)
The copy is read through a descriptor this process already holds on the source when it
has one, so the process never drops its own locks (S-12).

On the copy:
- a header that is not SQLite's (zeroed, overwritten) is rewritten with the first page
  size under which the schema page parses;
- the schema is read with `writable_schema` on, so one garbled entry does not hide the
  rest;
- each table is read in rowid order until it fails, then from the other end backwards
  until it fails; the unreadable span between is bisected into rowid ranges
  (`WHERE rowid BETWEEN a AND b`) and every range that still reads is kept, within a
  query budget per table. A WITHOUT ROWID table (usage) is read in key order as far as
  it goes.

The output is a fresh store made by `sessiondb.open_store` (current schema, a new
generation stamp), filled in one transaction with full durability barriers: sessions,
messages (their search index is built by the store's own triggers), usage and the
store's counters. Messages whose session row was lost get a stub session
(`source = 'recovered'`) so they stay reachable; dangling parent links are cleared;
message counts are recomputed. Compaction leases are not carried over (they are
short-lived locks).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import apsw

from ..files import staged
from ..errors import InvalidInput
from .identity import SQLITE_MAGIC, descriptors_of

MIN_ROWID, MAX_ROWID = -(2 ** 63), 2 ** 63 - 1
QUERY_BUDGET = 4000  # range queries per table before the rest is given up as lost
TABLES = ("sessions", "messages", "usage", "store_meta")
PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)


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


@dataclass
class RecoverReport:
    source: str
    output: str | None
    inspect_only: bool
    header_rewritten: bool = False
    tables: dict[str, TableSalvage] = field(default_factory=dict)
    sessions_kept: int = 0
    sessions_lost_estimate: int = 0
    sessions_stubbed: int = 0
    messages_kept: int = 0
    messages_lost_estimate: int = 0
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recover(source: Path | str, output: Path | str | None, *, inspect_only: bool = False) -> RecoverReport:
    """Salvage `source` into the new store `output` (or only count, with inspect_only)."""
    source = Path(os.path.realpath(source))
    if not source.is_file():
        raise InvalidInput(f"{source} is not a file")
    target = None
    if not inspect_only:
        if output is None:
            raise InvalidInput("say where the recovered store goes: --output NEW")
        target = Path(os.path.realpath(output))
        if target == source:
            raise InvalidInput("the output must be a new file, never the damaged one")
        if os.path.lexists(output) or target.exists() or any(os.path.exists(f"{target}{s}") for s in ("-wal", "-shm", "-journal")):
            raise InvalidInput(f"{target} already exists; recover writes a new file only")
        if not target.parent.is_dir():
            raise InvalidInput(f"{target.parent} is not a directory")
    report = RecoverReport(str(source), None if target is None else str(target), inspect_only)
    scratch = Path(tempfile.mkdtemp(prefix="sessiondb-recover-", dir=None if target is None else target.parent))
    try:
        work = scratch / "source.db"
        for suffix in ("", "-wal", "-journal"):
            if os.path.exists(f"{source}{suffix}"):
                _copy_out(Path(f"{source}{suffix}"), Path(f"{work}{suffix}"))
        report.header_rewritten = _fix_header(work, has_wal=os.path.exists(f"{work}-wal"))
        if report.header_rewritten:
            report.notes.append("the header was not SQLite's; it was rebuilt on the scratch copy")
        try:
            conn = apsw.Connection(str(work))
            conn.execute("PRAGMA writable_schema=ON")
            columns = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in TABLES}
            rowid_tables = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE '%WITHOUT ROWID%'")}
        except apsw.Error as exc:
            report.notes.append(f"nothing is readable: the schema cannot be read ({exc})")
            return report
        try:
            if target is None:
                for table in TABLES:
                    if columns[table]:
                        report.tables[table] = _salvage(conn, table, columns[table], table in rowid_tables,
                                                        lambda row: True)
            else:
                with staged(target, replace=False) as staging:  # published whole, private, or not at all
                    _rebuild(conn, columns, rowid_tables, staging, report)
        finally:
            conn.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for table, name in (("sessions", "sessions"), ("messages", "messages")):
        salvage = report.tables.get(table)
        if salvage is not None:
            setattr(report, f"{name}_kept", salvage.kept)
            setattr(report, f"{name}_lost_estimate", salvage.lost_estimate)
        else:
            report.notes.append(f"the {table} table could not be found in the source")
    return report


def _rebuild(conn: apsw.Connection, columns: dict[str, list[str]], rowid_tables: set[str], target: Path,
             report: RecoverReport) -> None:
    from .. import open_store

    open_store(target).close()
    out = apsw.Connection(str(target), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
    try:
        out.execute("PRAGMA synchronous=FULL")
        out.execute("PRAGMA foreign_keys=OFF")
        with out:
            for table in TABLES:
                wanted = [c for c in _columns_of(out, table) if c in columns.get(table, [])]
                if not wanted:
                    continue
                verb = "INSERT OR REPLACE" if table == "store_meta" else "INSERT OR IGNORE"
                sql = f"{verb} INTO {table}({', '.join(wanted)}) VALUES ({', '.join('?' * len(wanted))})"
                skip_stale = table == "store_meta"
                positions = [columns[table].index(c) for c in wanted]

                def insert(row: tuple, sql: str = sql, positions: list[int] = positions,
                           skip_stale: bool = skip_stale) -> bool:
                    values = [row[i] for i in positions]
                    if skip_stale and values[0] == "search_stale":
                        return False
                    out.execute(sql, values)
                    return out.changes() > 0

                report.tables[table] = _salvage(conn, table, columns[table], table in rowid_tables, insert)
            report.sessions_stubbed = _stub_orphans(out)
            out.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL "
                        "AND parent_session_id NOT IN (SELECT id FROM sessions)")
            out.execute("UPDATE sessions SET message_count = (SELECT count(*) FROM messages m "
                        "WHERE m.session_id = sessions.id AND m.state = 'active')")
        problems = [r[0] for r in out.execute("PRAGMA foreign_key_check")]
        if problems:
            report.notes.append(f"{len(problems)} foreign-key problem(s) remain in the output")
        out.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        out.close()
    if report.sessions_stubbed:
        report.notes.append(f"{report.sessions_stubbed} session(s) whose row was lost were recreated as stubs "
                            "(source 'recovered') to keep their messages")


def _columns_of(conn: apsw.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def _stub_orphans(out: apsw.Connection) -> int:
    note = json.dumps({"recovered": "the session row was lost; its messages were salvaged"})
    before = out.execute("SELECT count(*) FROM sessions").fetchone()[0]
    for table, stamp in (("messages", "min(timestamp)"), ("usage", "0")):
        out.execute(
            f"INSERT INTO sessions(id, source, started_at, metadata) SELECT session_id, 'recovered', {stamp}, ? "
            f"FROM {table} WHERE session_id NOT IN (SELECT id FROM sessions) GROUP BY session_id", (note,))
    return out.execute("SELECT count(*) FROM sessions").fetchone()[0] - before


def _salvage(conn: apsw.Connection, table: str, cols: list[str], has_rowid: bool,
             keep: Callable[[tuple], bool]) -> TableSalvage:
    result = TableSalvage()
    select = ", ".join(f'"{c}"' for c in cols)

    def take(row: tuple) -> None:
        try:
            stored = keep(row)
        except apsw.Error:  # a row decoded from a garbled page that the new store's types refuse
            result.invalid += 1
            return
        if stored:
            result.kept += 1
        else:
            result.skipped += 1

    if not has_rowid:
        try:
            for row in conn.execute(f"SELECT {select} FROM {table}"):
                take(row)
        except apsw.Error as exc:
            result.error = f"stopped after {result.kept} row(s): {exc}"
            result.unbounded = True
        return result

    budget = [QUERY_BUDGET]
    seen: list[int] = []

    def scan(lo: int, hi: int, descending: bool = False) -> tuple[int | None, bool]:
        """Read rows of [lo, hi] in one direction; (last rowid read, whether it failed)."""
        budget[0] -= 1
        order = "DESC" if descending else "ASC"
        last = None
        try:
            for row in conn.execute(f"SELECT rowid, {select} FROM {table} WHERE rowid BETWEEN ? AND ? "
                                    f"ORDER BY rowid {order}", (lo, hi)):
                rowid = row[0]
                # A garbled page can decode without an error into rows out of order or out
                # of range: that is damage, and nothing from there on is trusted.
                if not lo <= rowid <= hi or (last is not None and (rowid >= last if descending else rowid <= last)):
                    result.error = result.error or f"rows out of order at rowid {last}"
                    return last, True
                last = rowid
                seen.append(last)
                take(row[1:])
            return last, False
        except apsw.Error as exc:
            result.error = result.error or str(exc)
            return last, True

    def explore(lo: int, hi: int) -> None:
        """Keep every readable row of [lo, hi], which is known to contain damage."""
        while lo <= hi:
            if budget[0] <= 0:
                result.lost_ranges.append((lo, hi))
                return
            last, failed = scan(lo, hi)
            if not failed:
                return
            lo = lo if last is None else last + 1
            first, failed = scan(lo, hi, descending=True)
            if not failed:
                return
            hi = hi if first is None else first - 1
            if lo > hi:
                return
            if last is None and first is None:
                if hi - lo < 1 or budget[0] <= 0:
                    result.lost_ranges.append((lo, hi))
                    return
                mid = lo + (hi - lo) // 2
                explore(lo, mid)
                explore(mid + 1, hi)
                return

    try:  # the planner counts through the smallest index, which may have survived the damage
        result.expected = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    except apsw.Error:
        result.expected = None
    last, failed = scan(MIN_ROWID, MAX_ROWID)
    if failed or (result.expected is not None and len(seen) != result.expected):
        if failed:
            lo = MIN_ROWID if last is None else last + 1
            first, _ = scan(lo, MAX_ROWID, descending=True)
        candidates = _rowids_from_indexes(conn, table)
        if candidates is not None:
            # An index that survived lists every rowid: fetch each one not read yet by itself.
            got = set(seen)
            lost = []
            for rowid in candidates:
                if rowid in got:
                    continue
                try:
                    row = conn.execute(f"SELECT rowid, {select} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
                except apsw.Error:
                    row = None
                if row is not None and row[0] == rowid:
                    seen.append(rowid)
                    take(row[1:])
                else:
                    lost.append((rowid, rowid))
            result.lost_ranges = _merge(lost)
            result.lost_estimate = len(lost)
            return result
        if failed:
            hi = MAX_ROWID if first is None else first - 1
            if first is None:
                # The last page cannot be read, so the highest rowid is unknown: look a
                # reasonable way past the last row read, and say the rest is unknown.
                result.unbounded = True
                base = max(seen) if seen else 0
                hi = base + max(10_000, 4 * result.kept)
            explore(lo, hi)
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


# --- the scratch copy --------------------------------------------------------------------


def _copy_out(source: Path, target: Path) -> None:
    """Copy `source` byte for byte, through a descriptor this process holds on it if any."""
    held = descriptors_of(str(source))
    fd = held[0] if held else os.open(source, os.O_RDONLY)
    try:
        with open(target, "wb", opener=lambda p, f: os.open(p, f, 0o600)) as out:
            offset = 0
            while chunk := os.pread(fd, 1 << 20, offset):
                out.write(chunk)
                offset += len(chunk)
    finally:
        if not held:
            os.close(fd)


def _fix_header(work: Path, *, has_wal: bool) -> bool:
    """Rewrite a header that is not SQLite's; True if it was rewritten."""
    with open(work, "rb") as f:
        head = f.read(100)
    if head[:16] == SQLITE_MAGIC:
        return False
    size = os.path.getsize(work)
    original = head
    from ..store.sqlite.connect import APPLICATION_ID

    for page_size in PAGE_SIZES:
        if size < page_size or size % page_size:
            continue
        pages = size // page_size
        header = bytearray(100)
        header[:16] = SQLITE_MAGIC
        header[16:18] = (1 if page_size == 65536 else page_size).to_bytes(2, "big")
        header[18] = header[19] = 2 if has_wal else 1
        header[21], header[22], header[23] = 64, 32, 32
        header[24:28] = (1).to_bytes(4, "big")
        header[28:32] = pages.to_bytes(4, "big")
        header[40:44] = (1).to_bytes(4, "big")  # schema cookie
        header[44:48] = (4).to_bytes(4, "big")  # schema format
        header[56:60] = (1).to_bytes(4, "big")  # UTF-8
        header[68:72] = APPLICATION_ID.to_bytes(4, "big")
        header[92:96] = (1).to_bytes(4, "big")
        major, minor, patch = (int(p) for p in apsw.sqlite_lib_version().split(".")[:3])
        header[96:100] = (major * 1_000_000 + minor * 1000 + patch).to_bytes(4, "big")
        with open(work, "r+b") as f:
            f.write(bytes(header))
        try:
            conn = apsw.Connection(str(work))
            try:
                conn.execute("PRAGMA writable_schema=ON")
                if conn.execute("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").fetchone()[0]:
                    return True
            finally:
                conn.close()
        except apsw.Error:
            pass
    with open(work, "r+b") as f:
        f.write(original)
    return False
