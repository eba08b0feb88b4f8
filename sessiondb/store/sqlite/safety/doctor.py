"""The doctor: what state a store file is in, what class of damage it has, and the repair
of the classes that can be repaired in place.

Examination (`examine`) never writes. It opens the database read-only with APSW on a
private connection, never through sessiondb's shared writer registry (which would start
a writer, replay the spool and run migrations on a file that may be damaged). The only
plain file I/O on the database is the ledger's head/tail sample, read through a
descriptor SQLite already holds when this process has one (S-12, see ledger.py).

Damage classes, worst first:

- `structural`: the file's own structure or table data is damaged: the header is not
  SQLite's, the file is shorter than its header says, a table's b-tree (sessions,
  messages...) or the freelist is damaged, or a table's schema entry is unreadable.
  Nothing in place can heal it; `recover` rebuilds what is readable into a new file.
- `schema`: a schema object that the migrations can recreate is damaged: an index,
  trigger or view whose entry in `sqlite_schema` is garbled or missing, or a b-tree
  index whose content disagrees with its table. Repair rewrites the entry from the
  migrations' own SQL and rebuilds (REINDEX) the index.
- `index`: the full-text search index (FTS5 `messages_fts`, `messages_trigram` and their
  shadow tables) is damaged or marked stale. Repair rebuilds it from the messages.
- `none`.

The integrity check is `PRAGMA quick_check` (which in SQLite 3.44+ also runs each FTS5
table's own check, on a read-only connection), stopped after a time budget on large
files (the report says it was partial); `deep` runs the full `integrity_check` without a
budget. The FTS5 `'integrity-check'` command is not used for examination: it is an
INSERT and needs a writable connection.

Repair (`repair`) runs only when no other process holds the store and this process has
no connection on it (S-22), only after a forensic backup (S-21), and only within the
ledger's budget (S-20). Its connection uses `synchronous=FULL`.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import apsw

from ....errors import Cause, SessionDBError, StoreDamaged, StoreHeld
from ....home import SIDECAR_SUFFIXES
from . import forensics, ledger
from ... import spool
from .containment import no_checkpoint_on_close
from .holders import holders
from .identity import SQLITE_MAGIC, descriptors_of

NONE, INDEX, SCHEMA, STRUCTURAL = "none", "index", "schema", "structural"
SEVERITY = {NONE: 0, INDEX: 1, SCHEMA: 2, STRUCTURAL: 3}
QUICK_BUDGET = 10.0  # seconds a non-deep check may take before it stops (partial)
STARTUP_BUDGET = 0.5  # seconds of quick_check after an unclean shutdown (~60 MB; 100 MB takes 0.87 s)
FTS_TABLES = ("messages_fts", "messages_trigram")
MAX_LINES = 50


class RepairRefused(SessionDBError):
    """The repair did not run (held store, exhausted budget, no backup); nothing was changed."""


@dataclass
class Report:
    path: str
    exists: bool = False
    sqlite_version: str = apsw.sqlite_lib_version()
    journal_mode: str | None = None
    filesystem: str | None = None
    holders: list[str] = field(default_factory=list)
    identity: dict[str, Any] = field(default_factory=dict)
    size: int = 0
    page_size: int | None = None
    page_count: int | None = None
    free_pages: int | None = None
    wal_bytes: int = 0
    integrity: dict[str, Any] = field(default_factory=dict)
    index_stale: bool = False
    spool_pending: int = 0
    retired_wal: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    repair_failures: int = 0
    damage: str = NONE
    findings: list[str] = field(default_factory=list)  # what the damage is
    problems: list[str] = field(default_factory=list)  # everything that makes the exit status 1
    steps: list[str] = field(default_factory=list)  # what to do next
    repair: dict[str, Any] | None = None  # what --fix did

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        return data


def _worse(a: str, b: str) -> str:
    return a if SEVERITY[a] >= SEVERITY[b] else b


# --- opening ---------------------------------------------------------------------------


def open_readonly(db_path: Path, *, writable_schema: bool = False, quiet: bool = False) -> apsw.Connection:
    """A private read-only connection (never the shared registry's).

    `quiet` (no WAL or journal beside the file and no connection on it anywhere) opens it
    as immutable: a read-only WAL-mode connection would otherwise leave an empty -wal and a
    -shm behind, which it cannot remove, and examining a store must not change it.
    """
    uri = f"file:{_uri_path(db_path)}?mode=ro" + ("&immutable=1" if quiet else "")
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    if writable_schema:
        # Lets a connection read sqlite_schema even when one of its entries cannot be parsed.
        conn.execute("PRAGMA writable_schema=ON")
    return conn


def _uri_path(path: Path) -> str:
    return str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


@lru_cache(maxsize=8)
def reference_schema(applied: frozenset[str]) -> dict[str, tuple[str, str, str | None]]:
    """name -> (type, tbl_name, sql) of a healthy store with these migrations applied."""
    from ..migrations import MIGRATIONS

    conn = apsw.Connection(":memory:")
    try:
        with conn:
            for name, apply in MIGRATIONS:
                if name in applied:
                    apply(conn)
        return {name: (kind, table, sql) for kind, name, table, sql in
                conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")}
    finally:
        conn.close()


# --- examination -----------------------------------------------------------------------


def examine(db_path: Path | str, *, deep: bool = False, command: str = "sessiondb",
            budget: float | None = QUICK_BUDGET) -> Report:
    """Everything the doctor knows about the store at `db_path`; never writes to it."""
    from ..connect import filesystem_type

    db_path = Path(os.path.realpath(db_path))
    report = Report(str(db_path))
    report.filesystem = filesystem_type(db_path.parent)
    report.spool_pending = len(spool.pending(db_path))
    report.retired_wal = sorted(str(p) for p in db_path.parent.glob("retired-wal-*") if p.is_dir())
    report.backups = [str(p) for p in forensics.list_sets(db_path)]
    if not db_path.exists():
        report.problems.append(f"{db_path} does not exist")
        return report
    report.exists = True
    st = os.stat(db_path)
    report.size = st.st_size
    report.identity = {"device": st.st_dev, "inode": st.st_ino}
    report.holders = [str(h) for h in holders(db_path)]
    try:
        report.wal_bytes = os.stat(f"{db_path}-wal").st_size
    except FileNotFoundError:
        pass
    key = ledger.file_key(db_path)
    report.repair_failures = ledger.failures(db_path, key)
    _check_header(db_path, report)
    if report.damage == NONE and report.size:
        _check_database(db_path, report, deep=deep, budget=None if deep else budget)
    if report.spool_pending:
        report.problems.append(f"{report.spool_pending} spooled batch(es) wait to be replayed")
    if report.retired_wal:
        report.findings.append(f"{len(report.retired_wal)} retired-WAL capture(s) beside the store; keep them "
                               "until the store has been checked")
    _advise(report, db_path, command)
    return report


def _check_header(db_path: Path, report: Report) -> None:
    head = ledger.read_span(db_path, 0, 100)
    if not head:
        report.problems.append(f"{db_path} is empty: no store was ever created in it")
        return
    if len(head) < 100 or head[:16] != SQLITE_MAGIC:
        _damage(report, STRUCTURAL, "the file header is not an SQLite header (zeroed or overwritten)")
        return
    if head[18] == 2:  # the header's write version: 2 is WAL (read here: an immutable open says "delete")
        report.journal_mode = "wal"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    report.page_size = page_size
    if page_size < 512 or page_size & (page_size - 1):
        _damage(report, STRUCTURAL, f"the header names an impossible page size ({page_size})")
        return
    if report.size % page_size:
        _damage(report, STRUCTURAL, f"the file size ({report.size}) is not a whole number of pages: truncated")
        return
    pages = int.from_bytes(head[28:32], "big")
    size_valid = head[24:28] == head[92:96] and pages > 0
    if size_valid and report.size < pages * page_size:
        _damage(report, STRUCTURAL, f"the file is shorter ({report.size} bytes) than its header says "
                                    f"({pages} pages of {page_size}): truncated")


def _check_database(db_path: Path, report: Report, *, deep: bool, budget: float | None) -> None:
    try:
        # An immutable open takes no locks and so bypasses SQLite's sharing of descriptors
        # between connections: its close would drop this process's own locks (S-12). It is
        # used only when nothing, in this process or another, has the file open.
        quiet = not report.holders and not descriptors_of(str(db_path)) \
            and not any(os.path.exists(f"{db_path}{s}") for s in ("-wal", "-journal"))
        conn = open_readonly(db_path, writable_schema=True, quiet=quiet)
    except apsw.Error as exc:
        _damage(report, STRUCTURAL, f"the file cannot be opened as a database ({exc})")
        return
    try:
        _inspect(conn, db_path, report, deep=deep, budget=budget)
    except apsw.Error as exc:
        _damage(report, STRUCTURAL, f"reading the database failed ({exc})")
    finally:
        conn.close()


def _inspect(conn: apsw.Connection, db_path: Path, report: Report, *, deep: bool, budget: float | None) -> None:
    report.journal_mode = report.journal_mode or conn.execute("PRAGMA journal_mode").fetchone()[0]
    report.page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    report.free_pages = conn.execute("PRAGMA freelist_count").fetchone()[0]
    entries = conn.execute("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema").fetchall()
    schema_broken = _check_schema(conn, entries, report)
    names = {row[1]: row for row in entries}
    if "store_identity" in names and "store_identity" not in schema_broken:
        try:
            row = conn.execute("SELECT generation FROM store_identity").fetchone()
            report.identity["generation"] = row[0] if row else None
        except apsw.Error as exc:
            report.identity["generation"] = None
            report.findings.append(f"the generation stamp cannot be read ({exc})")
    if "store_meta" in names and "store_meta" not in schema_broken:
        try:
            from ..search import STALE_KEY

            report.index_stale = conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (STALE_KEY,)).fetchone() \
                is not None
        except apsw.Error:
            pass
        if report.index_stale:
            _damage(report, INDEX, "the search index is marked stale (damage was seen on a write)")
    lines, complete = _integrity_lines(conn, deep=deep, budget=budget)
    report.integrity = {"check": "integrity_check" if deep else "quick_check", "complete": complete,
                        "errors": lines[:MAX_LINES]}
    if not complete:
        report.findings.append(f"the integrity check stopped after its {budget:.0f} s budget; "
                               "run with --deep for a full check")
    roots = {row[3]: row for row in entries if row[3]}
    for cls, finding in classify_lines(lines, roots, schema_broken=bool(schema_broken)):
        _damage(report, cls, finding)


def _check_schema(conn: apsw.Connection, entries: list[tuple], report: Report) -> set[str]:
    """Compare the schema with the migrations' own; the names of broken entries."""
    try:
        applied = frozenset(r[0] for r in conn.execute("SELECT name FROM schema_migrations"))
    except apsw.Error as exc:
        _damage(report, STRUCTURAL, f"the migration record cannot be read ({exc})")
        return set()
    reference = reference_schema(applied)
    present = {row[1]: row for row in entries}
    broken = set()
    for name, (kind, table, sql) in reference.items():
        row = present.get(name)
        if row is None:
            if kind in ("index", "trigger", "view"):
                _damage(report, SCHEMA, f"the {kind} {name} is missing from the schema")
                broken.add(name)
            else:
                _damage(report, STRUCTURAL, f"the table {name} is missing from the schema")
                broken.add(name)
            continue
        if row[0] != kind or row[4] != sql:
            broken.add(name)
            if kind in ("index", "trigger", "view") and row[0] == kind:
                _damage(report, SCHEMA, f"the schema entry of the {kind} {name} is garbled")
            else:
                _damage(report, STRUCTURAL, f"the schema entry of the {kind} {name} is garbled")
    return broken


def _integrity_lines(conn: apsw.Connection, *, deep: bool, budget: float | None) -> tuple[list[str], bool]:
    pragma = "integrity_check" if deep else "quick_check"
    deadline = None if budget is None else time.monotonic() + budget
    interrupted = [False]

    def progress() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            interrupted[0] = True
            return True
        return False

    conn.set_progress_handler(progress, 10_000)
    lines: list[str] = []
    try:
        for (row,) in conn.execute(f"PRAGMA {pragma}({MAX_LINES})"):
            lines.extend(line for line in str(row).split("\n") if line)
    except apsw.InterruptError:
        return lines, False
    except apsw.Error as exc:
        lines.append(f"the check itself failed: {exc}")
    finally:
        conn.set_progress_handler(None)
    if lines == ["ok"]:
        return [], True
    return lines, not interrupted[0]


_TREE = re.compile(r"^Tree (\d+) page")
_PAGE = re.compile(r"\bpage \d+")
_NAMED_INDEX = re.compile(r"(?:index|from index) ([A-Za-z_][A-Za-z0-9_]*)")


def _is_fts(name: str) -> bool:
    return any(name == t or name.startswith(t + "_") for t in FTS_TABLES)


def classify_lines(lines: list[str], roots: dict[int, tuple], *, schema_broken: bool) -> list[tuple[str, str]]:
    """(class, finding) for each integrity-check line, by the object it names."""
    found: list[tuple[str, str]] = []
    unattributed: list[str] = []
    for line in lines:
        if line.startswith("*** in database"):
            continue
        match = _TREE.match(line)
        if match:
            entry = roots.get(int(match.group(1)))
            if entry is None:
                found.append((STRUCTURAL, line))
            elif _is_fts(entry[1]):
                found.append((INDEX, f"search index {entry[1]}: {line}"))
            elif entry[0] == "index":
                found.append((SCHEMA, f"index {entry[1]}: {line}"))
            else:
                found.append((STRUCTURAL, f"table {entry[1]}: {line}"))
            continue
        if "fts5" in line or any(f'"{t}"' in line for t in FTS_TABLES):
            found.append((INDEX, f"search index: {line}"))
            continue
        match = _NAMED_INDEX.search(line)
        if match and ("missing from index" in line or "entries in index" in line or "non-unique entry" in line):
            name = match.group(1)
            found.append((INDEX if _is_fts(name) else SCHEMA, f"index {name}: {line}"))
            continue
        if schema_broken and line.endswith("never used"):
            continue  # pages of a schema entry that could not be parsed: repaired with it
        unattributed.append(line)
    classes = {cls for cls, _ in found}
    only = next(iter(classes)) if len(classes) == 1 else None
    for line in unattributed:
        if found and ("malformed" in line or line.startswith("the check itself failed")):
            continue  # the check tripping over damage it already attributed
        # A page-level complaint (fragmentation, overlapping cells) beside damage attributed
        # to one repairable object only is that object's page; orphaned pages are too when
        # the repair ends with a VACUUM (the schema class).
        page_level = _PAGE.search(line) and not line.startswith("Freelist") and "never used" not in line
        if only in (INDEX, SCHEMA) and (page_level or (only == SCHEMA and line.endswith("never used"))):
            found.append((only, line))
            continue
        found.append((STRUCTURAL, line))
    return found


def _damage(report: Report, cls: str, finding: str) -> None:
    report.damage = _worse(report.damage, cls)
    report.findings.append(finding)
    if finding not in report.problems:
        report.problems.append(finding)


def recover_steps(db_path: Path, command: str) -> list[str]:
    new = db_path.with_name(db_path.name + ".recovered")
    return [
        "Quit every process using this store (gateway, desktop app, CLI, cron jobs); do not delete "
        f"{db_path.name}-wal or {db_path.name}-shm, and do not copy files over the store.",
        f"Run `{command} recover --source {db_path} --output {new}`: it rebuilds what is readable into a "
        "new file and reports what it kept and lost; the damaged file is never touched.",
        f"With every process still stopped, move the damaged files aside ({db_path}, -wal, -shm) and move "
        f"{new} to {db_path}; keep the damaged files and {db_path.parent / 'backups'} until you are satisfied.",
    ]


def _advise(report: Report, db_path: Path, command: str) -> None:
    if report.damage == STRUCTURAL:
        report.steps = recover_steps(db_path, command)
    elif report.damage in (INDEX, SCHEMA) or report.spool_pending:
        if report.holders:
            report.steps.append(f"Quit the processes holding the store ({', '.join(report.holders)}), then run "
                                f"`{command} doctor --fix`.")
        else:
            report.steps.append(f"Run `{command} doctor --fix`.")
    if report.repair_failures >= ledger.MAX_FAILED and report.damage != NONE:
        report.steps = [f"Repair already failed {report.repair_failures} times on this file; it will not be "
                        "tried again."] + recover_steps(db_path, command)


# --- repair ----------------------------------------------------------------------------


def repair(db_path: Path | str, *, command: str = "sessiondb", deep: bool = False,
           free_space: forensics.FreeSpace = forensics.statvfs_space) -> Report:
    """Heal the index and schema classes in place; replay the spool; checkpoint.

    Raises StoreHeld while another process holds the store (S-22) and RepairRefused when
    this process holds it, the ledger's budget is spent, or no forensic backup could be
    taken (S-20, S-21): in every refusal nothing was changed. Structural damage is never
    operated on: the returned report carries the recover steps.
    """
    db_path = Path(os.path.realpath(db_path))
    before = examine(db_path, deep=deep, command=command)
    actions: list[str] = []
    if not before.exists:
        return before
    if before.damage in (INDEX, SCHEMA):
        _refuse_if_held(db_path)
    if before.damage == NONE:
        # A healthy file (repaired or restored since) owes nothing to the ledger: the sample
        # can miss where a restore differs from the damaged file, so the shape is cleared.
        ledger.record_success(db_path, ledger.file_key(db_path))
        _replay_and_checkpoint(db_path, before, actions)
        after = examine(db_path, deep=deep, command=command)
        after.repair = {"actions": actions, "backup": None}
        return after
    key = ledger.file_key(db_path)
    if ledger.exhausted(db_path, key):
        raise RepairRefused(
            f"repair already failed {ledger.failures(db_path, key)} times on {db_path}; it will not be tried "
            "again on this file. " + " ".join(recover_steps(db_path, command)))
    if before.damage == STRUCTURAL:
        count = ledger.record_failure(db_path, key, None, "; ".join(before.findings[:3]))
        before.repair = {"actions": ["structural damage: no surgery attempted; follow the recover steps"],
                         "backup": None, "failed_passes": count}
        return before
    backup = forensics.take(db_path, free_space=free_space)  # BackupRefused: no backup, no surgery
    actions.append(f"forensic backup {backup.main}" + (" (identical copy reused)" if backup.reused else ""))
    error = None
    try:
        _operate(db_path, before, actions)
    except apsw.Error as exc:
        error = exc
        actions.append(f"repair failed: {exc}")
    after = examine(db_path, deep=deep, command=command)
    if after.damage == NONE and error is None:
        ledger.record_success(db_path, key)
        _replay_and_checkpoint(db_path, after, actions)
        after = examine(db_path, deep=deep, command=command)
        failed = 0
    else:
        failed = ledger.record_failure(db_path, key, ledger.file_key(db_path), "; ".join(after.findings[:3]))
        after.repair_failures = failed
        _advise(after, db_path, command)
    after.repair = {"actions": actions, "backup": str(backup.main), "failed_passes": failed}
    return after


def _refuse_if_held(db_path: Path) -> None:
    held_by = holders(db_path)
    if held_by:
        names = ", ".join(map(str, held_by))
        raise StoreHeld(f"repair refused: {db_path} is held by {names}; quit those processes and run "
                        "`doctor --fix` again", held_by)
    if any(descriptors_of(str(db_path) + s) for s in ("",) + SIDECAR_SUFFIXES):
        raise RepairRefused(f"repair refused: this process has {db_path} open; close every store handle on it "
                            "first")


def repair_connection(db_path: Path) -> apsw.Connection:
    """A private writable connection with full durability barriers."""
    from ..connect import busy_handler

    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_NOFOLLOW)
    conn.set_busy_handler(busy_handler(5.0))
    try:
        # writable_schema first: every other statement would parse the (maybe damaged) schema.
        conn.execute("PRAGMA writable_schema=ON")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=OFF")
    except BaseException:
        conn.close()
        raise
    return conn


def _operate(db_path: Path, report: Report, actions: list[str]) -> None:
    from .. import search

    conn = repair_connection(db_path)
    try:
        if report.damage == SCHEMA:
            _repair_schema(conn, report, actions)
        if report.damage == INDEX or report.index_stale or any("search index" in f for f in report.findings):
            with conn:
                search.rebuild(conn)
            actions.append("rebuilt the search indexes from the messages")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _repair_schema(conn: apsw.Connection, report: Report, actions: list[str]) -> None:
    """Drop the entries of damaged indexes, triggers and views and create them again from
    the migrations' SQL. Entries are removed from sqlite_schema directly (DROP would have
    to walk a damaged b-tree); the pages they leave behind are reclaimed by a VACUUM."""
    conn.execute("PRAGMA writable_schema=ON")
    applied = frozenset(r[0] for r in conn.execute("SELECT name FROM schema_migrations"))
    reference = reference_schema(applied)
    present = {n: (t, s) for t, n, s in conn.execute("SELECT type, name, sql FROM sqlite_schema")}
    damaged = set(_damaged_indexes(report))
    redo = []
    for name, (kind, _table, sql) in reference.items():
        if kind not in ("index", "trigger", "view") or sql is None:
            continue
        if name not in present or present[name] != (kind, sql) or name in damaged:
            redo.append((kind, name, sql))
    autoindexes = sorted(n for n in damaged if n.startswith("sqlite_autoindex"))
    with conn:
        for kind, name, _sql in redo:
            conn.execute("DELETE FROM sqlite_schema WHERE name = ? AND type = ?", (name, kind))
    conn.execute("PRAGMA writable_schema=RESET")
    with conn:
        # Views before the triggers that may read them, in the migrations' order otherwise.
        for kind, name, sql in sorted(redo, key=lambda r: {"view": 0, "index": 1, "trigger": 2}[r[0]]):
            conn.execute(sql)
            actions.append(f"recreated {kind} {name} from the migrations")
    for name in autoindexes:  # a constraint's own index cannot be dropped; rebuild it in place
        conn.execute(f'REINDEX "{name}"')
        actions.append(f"rebuilt index {name}")
    conn.execute("VACUUM")
    actions.append("vacuumed (reclaims the pages of the replaced entries)")


def _damaged_indexes(report: Report) -> list[str]:
    names = []
    for finding in report.findings:
        match = re.match(r"index ([A-Za-z_][A-Za-z0-9_]*):", finding)
        if match:
            names.append(match.group(1))
    return names


def _replay_and_checkpoint(db_path: Path, report: Report, actions: list[str]) -> None:
    """Replay the spool through the store itself, then checkpoint, both only when nobody else holds it."""
    from .... import open_store

    if report.spool_pending:
        with open_store(db_path) as store:
            result = store.replay_spool()
        actions.append(f"replayed {len(result.replayed)} spooled batch(es)"
                       + (f", {len(result.kept)} kept" if result.kept else ""))
    held_by = holders(db_path)
    if held_by:
        actions.append(f"checkpoint skipped: held by {', '.join(map(str, held_by))}")
    elif os.path.exists(f"{db_path}-wal"):
        conn = repair_connection(db_path)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        actions.append("checkpointed the write-ahead log")


# --- the startup probe -----------------------------------------------------------------


def unclean_shutdown(db_path: Path) -> bool:
    """A WAL (or rollback journal) with content at the first open of this process, and no
    other process holding the store: the last writer did not close cleanly (a clean close
    removes the WAL; a finished transaction empties or removes the journal)."""
    left_behind = False
    for suffix in ("-wal", "-journal"):
        try:
            left_behind = left_behind or os.stat(f"{db_path}{suffix}").st_size > 0
        except FileNotFoundError:
            continue
    return left_behind and not holders(db_path)


def startup_probe(conn: apsw.Connection, db_path: Path, *, budget: float = STARTUP_BUDGET) -> None:
    """A size-bounded quick check after an unclean shutdown; raises StoreDamaged (cause
    corrupt) on structural damage, before any write. Index and schema damage are left to
    the doctor (writes stay safe: index damage is contained by S-16)."""
    lines, _complete = _integrity_lines(conn, deep=False, budget=budget)
    if not lines:
        return
    try:
        roots = {r[3]: r for r in conn.execute("SELECT type, name, tbl_name, rootpage FROM sqlite_schema") if r[3]}
    except apsw.Error:
        roots = {}
    classes = classify_lines(lines, roots, schema_broken=False)
    if any(cls == STRUCTURAL for cls, _ in classes):
        detail = next(f for cls, f in classes if cls == STRUCTURAL)
        # The caller closes this connection: it must not checkpoint the WAL into a damaged file.
        no_checkpoint_on_close(conn)
        raise StoreDamaged(
            f"{db_path} was not closed cleanly and its integrity probe found structural damage ({detail}); "
            "sessiondb did not write to it. Quit every process using it and run `sessiondb doctor`.",
            Cause.CORRUPT,
        )
