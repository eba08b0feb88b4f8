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
- each table is read as far as it can be (salvage.py).

The output is a fresh store made the way the backend makes one (connect, the current
migrations, a new generation stamp), filled in one transaction with full durability
barriers: sessions, messages (their search index is built afterwards from them, in its own file),
usage and the store's counters. Messages whose session row was lost get a stub session
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

from ....errors import InvalidInput
from ....files import descriptors_of, private_file, staged
from ....home import make_private
from ..connect import APPLICATION_ID, configure_writer, connect
from ..migrations import migrate
from . import captures, walframes
from .containment import SQLITE_MAGIC
from .examine import STALE_KEY, open_readonly
from .holders import holders
from .salvage import TableSalvage, salvage

TABLES = ("sessions", "messages", "usage", "store_meta")
PAGE_SIZES = (4096, 1024, 2048, 8192, 16384, 32768, 65536, 512)
SIDECARS = ("-wal", "-journal")  # the files beside the main one that carry its last commits


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
    target = None if inspect_only else _new_target(source, output)
    report = RecoverReport(str(source), None if target is None else str(target), inspect_only)
    scratch = Path(tempfile.mkdtemp(prefix="sessiondb-recover-", dir=None if target is None else target.parent))
    try:
        work = _scratch_copy(source, scratch, report)
        try:
            conn = apsw.Connection(str(work))
            conn.execute("PRAGMA writable_schema=ON")
            columns = {t: _columns_of(conn, t) for t in TABLES}
            rowid_tables = {name for (name,) in conn.execute(
                "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE '%WITHOUT ROWID%'")}
        except apsw.Error as exc:
            report.notes.append(f"nothing is readable: the schema cannot be read ({exc})")
            return report
        try:
            if target is None:
                for table in TABLES:
                    if columns[table]:
                        report.tables[table] = salvage(conn, table, columns[table], table in rowid_tables,
                                                       lambda row: True)
            else:
                with staged(target, replace=False) as staging:  # published whole, private, or not at all
                    _rebuild(conn, columns, rowid_tables, staging, report)
        finally:
            conn.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _summarise(report)
    return report


def recover_capture(db_path: Path, capture: str, scratch: Path) -> list[RecoverReport]:
    """Salvage what a retired-WAL capture beside the store at `db_path` holds (captures.py)
    into new stores in the directory `scratch`: `read.db`, from the WAL as SQLite reads it
    laid over the file it was written for when the capture kept a copy of it, else over a
    snapshot of the store, and `every-frame.db`, from the newest version of
    every page the WAL still holds, earlier cycles included (walframes.py), laid over
    another. Neither the store nor the capture is changed."""
    wal = captures.wal_of(db_path, capture)
    own = captures.database_of(db_path, capture)
    work = Path(tempfile.mkdtemp(prefix="sessiondb-capture-", dir=scratch))
    try:
        read, every = work / "read", work / "every-frame"
        read.mkdir(mode=0o700)
        every.mkdir(mode=0o700)
        if own is not None:  # the very file the WAL was written for
            _private_copy(own, read / db_path.name)
        else:
            _snapshot(db_path, read / db_path.name)
        _private_copy(read / db_path.name, every / db_path.name)
        if wal is not None:
            _private_copy(wal, read / f"{db_path.name}-wal")
        reports = [recover(read / db_path.name, scratch / "read.db")]
        if wal is not None and walframes.lay_every_frame(wal, every / db_path.name):
            reports.append(recover(every / db_path.name, scratch / "every-frame.db"))
        return reports
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _private_copy(source: Path, destination: Path) -> None:
    with private_file(destination, "wb") as out, open(source, "rb") as data:
        shutil.copyfileobj(data, out)


def _snapshot(db_path: Path, base: Path) -> None:
    """A consistent copy of the store at `db_path` in WAL mode (so a WAL put beside it is
    read), made through SQLite's backup API, never plain I/O on the live file (S-12): page
    for page, so the captured frames land where they were written."""
    if not db_path.is_file():
        raise InvalidInput(f"{db_path} does not exist: there is no file to lay the captured WAL over")
    # Immutable only while nothing, here or elsewhere, has the file or a log beside it open
    # (examine.py says why); else an ordinary read-only connection, which shares locks.
    quiet = not holders(db_path) and not descriptors_of(str(db_path)) and not any(
        os.path.exists(f"{db_path}{s}") for s in SIDECARS)
    source = open_readonly(db_path, quiet=quiet)
    try:
        copy = apsw.Connection(str(base))
        try:
            copy.execute("PRAGMA journal_mode=WAL")
            with copy.backup("main", source, "main") as step:
                step.step(-1)
            copy.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            copy.close()
    finally:
        source.close()
    for suffix in ("-wal", "-shm"):
        try:
            os.unlink(f"{base}{suffix}")
        except FileNotFoundError:
            pass


def _new_target(source: Path, output: Path | str | None) -> Path:
    """The output path, refused unless it is a new file beside no sidecar."""
    if output is None:
        raise InvalidInput("say where the recovered store goes: --output NEW")
    target = Path(os.path.realpath(output))
    if target == source:
        raise InvalidInput("the output must be a new file, never the damaged one")
    if os.path.lexists(output) or target.exists() or any(os.path.exists(f"{target}{s}") for s in ("-wal", "-shm", "-journal")):
        raise InvalidInput(f"{target} already exists; recover writes a new file only")
    if not target.parent.is_dir():
        raise InvalidInput(f"{target.parent} is not a directory")
    return target


def _scratch_copy(source: Path, scratch: Path, report: RecoverReport) -> Path:
    """Copy the source's files into `scratch` and patch a header that is not SQLite's there."""
    work = scratch / "source.db"
    for suffix in ("",) + SIDECARS:
        if os.path.exists(f"{source}{suffix}"):
            _copy_out(Path(f"{source}{suffix}"), Path(f"{work}{suffix}"))
    report.header_rewritten = _fix_header(work, has_wal=os.path.exists(f"{work}-wal"))
    if report.header_rewritten:
        report.notes.append("the header was not SQLite's; it was rebuilt on the scratch copy")
    return work


def _summarise(report: RecoverReport) -> None:
    for table in ("sessions", "messages"):
        found = report.tables.get(table)
        if found is not None:
            setattr(report, f"{table}_kept", found.kept)
            setattr(report, f"{table}_lost_estimate", found.lost_estimate)
        else:
            report.notes.append(f"the {table} table could not be found in the source")


def _create_store(target: Path) -> None:
    """A new, empty store at `target`, made as the backend makes one: private, WAL where
    the filesystem allows it, the current migrations, its identity page checkpointed."""
    conn = connect(target, patience=5.0)
    try:
        make_private(target)
        configure_writer(conn, target, "full", patience=5.0)
        migrate(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    make_private(target)


def _rebuild(conn: apsw.Connection, columns: dict[str, list[str]], rowid_tables: set[str], target: Path,
             report: RecoverReport) -> None:
    _create_store(target)
    out = apsw.Connection(str(target), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
    try:
        out.execute("PRAGMA synchronous=FULL")
        out.execute("PRAGMA foreign_keys=OFF")
        with out:
            for table in TABLES:
                keep = _inserter(out, table, columns.get(table, []))
                if keep is not None:
                    report.tables[table] = salvage(conn, table, columns[table], table in rowid_tables, keep)
            report.sessions_stubbed = _stub_orphans(out)
            _tidy(out)
        problems = [r[0] for r in out.execute("PRAGMA foreign_key_check")]
        if problems:
            report.notes.append(f"{len(problems)} foreign-key problem(s) remain in the output")
        out.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        out.close()
    if report.sessions_stubbed:
        report.notes.append(f"{report.sessions_stubbed} session(s) whose row was lost were recreated as stubs "
                            "(source 'recovered') to keep their messages")


def _inserter(out: apsw.Connection, table: str, source_columns: list[str]) -> Callable[[tuple], bool] | None:
    """Stores one source row of `table` in the output (True if it was new), or None when
    the two have no column in common."""
    wanted = [c for c in _columns_of(out, table) if c in source_columns]
    if not wanted:
        return None
    # store_meta's counters overwrite the new store's initial values; a stale-index marker
    # is not carried over, since the output's indexes are built fresh.
    verb = "INSERT OR REPLACE" if table == "store_meta" else "INSERT OR IGNORE"
    sql = f"{verb} INTO {table}({', '.join(wanted)}) VALUES ({', '.join('?' * len(wanted))})"
    skip_stale = table == "store_meta"
    positions = [source_columns.index(c) for c in wanted]

    def insert(row: tuple) -> bool:
        values = [row[i] for i in positions]
        if skip_stale and values[0] == STALE_KEY:
            return False
        out.execute(sql, values)
        return out.changes() > 0

    return insert


def _tidy(out: apsw.Connection) -> None:
    """Clear parent links to sessions that were lost and recount the messages."""
    out.execute("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL "
                "AND parent_session_id NOT IN (SELECT id FROM sessions)")
    out.execute("UPDATE sessions SET message_count = (SELECT count(*) FROM messages m "
                "WHERE m.session_id = sessions.id AND m.state = 'active')")


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
