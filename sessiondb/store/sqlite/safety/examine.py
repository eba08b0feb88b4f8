"""Examination: what state a store file is in and what class of damage it has (doctor.py
describes the classes). `examine` never writes.

It opens the database read-only with APSW on a private connection, never through the
shared file of store.py (which would start a writer, replay the spool and run migrations
on a file that may be damaged). The only plain file I/O on the database is the ledger's
head/tail sample, read through a descriptor SQLite already holds when this process has
one (S-12, see ledger.py). The schema is checked as open checks it (schema.py), so that
whatever open refuses the doctor reports, with the class its repair acts on.

A full disk is not damage (S-48): a read or check that could not complete for lack of
space (SQLITE_FULL, ENOSPC, a -shm or temp file that could not grow) says nothing about the
file, and a main file shorter than its header says while a WAL holds the store's pages is
a checkpoint the disk stopped, not a truncation. The report's `disk` says how much room
there is and how much the store needs; too little is the `disk_full` problem, with its
own steps.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from ....errors import Cause, classify
from ....files import descriptors_of
from ....model import DoctorReport
from ... import spool
from ..connect import file_uri_path, filesystem_type
from ..index import schema as index_schema
from . import captures, copies, forensics, ledger, walowner
from .containment import SQLITE_MAGIC
from .holders import holders
from .integrity import INDEX, MAX_LINES, NONE, SCHEMA, STRUCTURAL, classify_lines, integrity_lines, worse
from .schema import schema_findings

QUICK_BUDGET = 10.0  # seconds a non-deep check may take before it stops (partial)
# Room the next writes need beyond what the store already owes its disk (the log of a few
# batches); with less free than the store needs, the doctor reports the disk as full.
WRITE_ROOM = 64 * 1024
SHM_BYTES = 32 * 1024  # the -shm's first region, made by the first connection when absent
STALE_KEY = "search_stale"  # store_meta's marker of a damaged in-file index (stores before 0006)


@dataclass
class Report(DoctorReport):
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
    search_index: dict[str, Any] = field(default_factory=dict)
    spool_pending: int = 0
    retired_wal: list[str] = field(default_factory=list)
    backups: list[str] = field(default_factory=list)
    repair_failures: int = 0
    disk: dict[str, Any] = field(default_factory=dict)  # free and needed bytes; full when free < needed
    # What only `restore-captured` brings back (captures.py, store/captured.py): captures not
    # brought back yet, spooled batches --repair cannot replay, and whether any is of another generation.
    way_back: dict[str, Any] = field(default_factory=dict)


# --- opening ---------------------------------------------------------------------------


def open_readonly(db_path: Path, *, writable_schema: bool = False, quiet: bool = False) -> apsw.Connection:
    """A private read-only connection (never a SharedFile's).

    `quiet` (no WAL or journal beside the file and no connection on it anywhere) opens it
    as immutable: a read-only WAL-mode connection would otherwise leave an empty -wal and a
    -shm behind, which it cannot remove, and examining a store must not change it.
    """
    uri = f"file:{file_uri_path(db_path)}?mode=ro" + ("&immutable=1" if quiet else "")
    conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    if writable_schema:
        # Lets a connection read sqlite_schema even when one of its entries cannot be parsed.
        conn.execute("PRAGMA writable_schema=ON")
    return conn


# --- examination -----------------------------------------------------------------------


def examine(db_path: Path | str, *, deep: bool = False, command: str = "sessiondb",
            budget: float | None = QUICK_BUDGET) -> Report:
    """Everything the doctor knows about the store at `db_path`; never writes to it."""
    db_path = Path(os.path.realpath(db_path))
    report = Report(str(db_path))
    report.filesystem = filesystem_type(db_path.parent)
    report.spool_pending = len(spool.pending(db_path))
    report.retired_wal = sorted(str(p) for p in db_path.parent.glob("retired-wal-*") if p.is_dir())
    report.backups = [str(p) for p in forensics.list_sets(db_path)]
    shm_missing = not os.path.exists(f"{db_path}-shm")  # before the check's own connection makes one
    if not db_path.exists():
        report.problems.append(f"{db_path} does not exist")
        report.steps.append(f"To fill it, import a tool's history (`{command} import --from claude-code`, or "
                            f"codex, llm, hermes), or try `{command} demo`, which writes a few sessions into "
                            "the `demo` profile.")
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
    _check_disk(db_path, report, shm_missing=shm_missing)
    if report.spool_pending:
        report.problems.append(f"{report.spool_pending} spooled batch(es) wait to be replayed")
        _report_other_generations(db_path, report)
    if report.retired_wal:
        _report_captures(db_path, report)
        _report_replaced(report)
    advise(report, db_path, command)
    return report


def _report_other_generations(db_path: Path, report: Report) -> None:
    """Spooled batches refused by another generation of the store wait for it (S-13); only
    `restore-captured --other-generations` brings them into this one (S-49)."""
    ours = report.identity.get("generation")
    waiting = 0
    for path in spool.pending(db_path):
        try:
            refused_by = spool.read(path).get("generation")
        except (OSError, ValueError):
            continue
        waiting += bool(refused_by and ours and refused_by != ours)
    if waiting:
        report.way_back["spool_other_generations"] = waiting
        report.findings.append(
            f"{waiting} spooled batch(es) were refused by another generation of this store (a file since "
            "replaced); they are never replayed into this one by themselves: `restore-captured "
            "--other-generations` brings them in, `--into NEW` into a new store")


def _report_lost_sessions(conn: apsw.Connection, db_path: Path, report: Report) -> None:
    """Spooled batches of this generation whose session the store does not hold (it was
    created in commits a deleted WAL took with it): replaying them fails every time, so
    they are `restore-captured`'s, which brings the captured session back first."""
    ours = report.identity.get("generation")
    lost = 0
    for path in spool.pending(db_path):
        try:
            record = spool.read(path)
        except (OSError, ValueError):
            continue
        if record.get("generation") not in (None, ours):
            continue  # another generation's: counted by _report_other_generations
        lost += conn.execute("SELECT 1 FROM sessions WHERE id = ?", (record.get("session_id"),)).fetchone() is None
    if lost:
        report.way_back["spool_without_session"] = lost
        report.findings.append(f"{lost} spooled batch(es) belong to a session this store does not hold (it was "
                               "lost with the commits of a deleted or replaced write-ahead log)")


def _report_captures(db_path: Path, report: Report) -> None:
    """A capture not brought back yet may hold the only copy of acknowledged messages
    (S-49): a problem until `restore-captured` has brought it back, a note after."""
    ours = report.identity.get("generation")
    waiting = []
    for capture in captures.captures(db_path):
        done = capture["restored"]
        if done:
            report.findings.append(f"{capture['capture']} was brought back into {done.get('into')}; it may be "
                                   "deleted once you no longer need it")
            continue
        waiting.append(capture)
        if capture["generation"] and ours and capture["generation"] != ours:
            report.way_back["other_generations"] = True
    if waiting:
        report.way_back["captures"] = len(waiting)
        report.problems.append(
            f"{len(waiting)} retired-WAL capture(s) hold commits that are not brought back into the store: "
            + ", ".join(c["capture"] for c in waiting))


def _report_replaced(report: Report) -> None:
    """What a retired-WAL capture of a replaced file says happened."""
    for folder in report.retired_wal:
        try:
            manifest = json.loads((Path(folder) / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("cause") == "replaced":
            report.findings.append(
                f"the file was replaced while in use: the write-ahead log written for the old file "
                f"({manifest.get('wal_generation')}) was set aside unreplayed in {folder}")


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
    if size_valid and report.size < pages * page_size and not report.wal_bytes:
        # With a WAL the header may be a checkpoint's first page, written before the disk
        # ran out for the rest: SQLite reads the store through the WAL, and the checks
        # that follow judge what it reads.
        _damage(report, STRUCTURAL, f"the file is shorter ({report.size} bytes) than its header says "
                                    f"({pages} pages of {page_size}): truncated")


def _check_database(db_path: Path, report: Report, *, deep: bool, budget: float | None) -> None:
    foreign = None if report.holders else walowner.foreign_wal(db_path)
    if foreign is not None:
        # Never read a WAL over a main file it does not belong to (S-13): examine the main
        # file alone; the next open sets the WAL aside, and its commits have a way back (S-49).
        report.way_back.update(foreign_wal=True, other_generations=True)
        report.problems.append(
            f"the write-ahead log beside the file was written for another file (generation {foreign[0]}, the "
            f"file is {foreign[1]}): it was left by a file that was replaced, is not part of this store, and "
            "the next open keeps it aside in a retired-wal folder without replaying it")
        report.findings.append(report.problems[-1])
    try:
        # An immutable open takes no locks and so bypasses SQLite's sharing of descriptors
        # between connections: its close would drop this process's own locks (S-12). It is
        # used only when nothing, in this process or another, has the file open.
        quiet = not report.holders and not descriptors_of(str(db_path)) and (foreign is not None or not any(
            os.path.exists(f"{db_path}{s}") for s in ("-wal", "-journal")))
        conn = open_readonly(db_path, writable_schema=True, quiet=quiet)
    except apsw.Error as exc:
        if not _no_room(report, "the database could not be opened", exc):
            _damage(report, STRUCTURAL, f"the file cannot be opened as a database ({exc})")
        return
    try:
        _inspect(conn, db_path, report, deep=deep, budget=budget)
    except apsw.Error as exc:
        if not _no_room(report, "the database could not be read to the end", exc):
            _damage(report, STRUCTURAL, f"reading the database failed ({exc})")
    finally:
        conn.close()


def _inspect(conn: apsw.Connection, db_path: Path, report: Report, *, deep: bool, budget: float | None) -> None:
    report.journal_mode = report.journal_mode or conn.execute("PRAGMA journal_mode").fetchone()[0]
    report.page_count = conn.execute("PRAGMA page_count").fetchone()[0]
    report.free_pages = conn.execute("PRAGMA freelist_count").fetchone()[0]
    entries = conn.execute("SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema").fetchall()
    schema_broken = _check_schema(conn, report)
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
            report.index_stale = conn.execute("SELECT 1 FROM store_meta WHERE key = ?", (STALE_KEY,)).fetchone() \
                is not None
        except apsw.Error:
            pass
        if report.index_stale:
            _damage(report, INDEX, "the search index is marked stale (damage was seen on a write)")
    if report.spool_pending and "sessions" in names and "sessions" not in schema_broken:
        _report_lost_sessions(conn, db_path, report)
    lines, complete = integrity_lines(conn, deep=deep, budget=budget)
    report.integrity = {"check": "integrity_check" if deep else "quick_check", "complete": complete,
                        "errors": lines[:MAX_LINES]}
    if not complete:
        report.findings.append(f"the integrity check stopped after its {budget:.0f} s budget; "
                               "run with --deep for a full check")
    roots = {row[3]: row for row in entries if row[3]}
    for cls, finding in classify_lines(lines, roots, schema_broken=bool(schema_broken)):
        _damage(report, cls, finding, _in_words(cls, finding))
    _check_search_index(db_path, report, deep=deep)


def _check_search_index(db_path: Path, report: Report, *, deep: bool) -> None:
    """The index's own file (derived data: its damage is the `index` class, healed by
    deleting it; a missing file is healthy, it is built at the next open)."""
    path = index_schema.path_of(db_path)
    report.search_index = {"path": str(path), "exists": path.exists()}
    if not path.exists():
        return
    quiet = not report.holders and not os.path.exists(f"{path}-wal")
    try:
        conn = open_readonly(path, quiet=quiet)
        try:
            lines, _ = integrity_lines(conn, deep=deep, budget=None)
        finally:
            conn.close()
    except apsw.Error as exc:
        if _no_room(report, "the search index could not be checked", exc):
            return
        lines = [f"the check itself failed ({exc})"]
    report.search_index["errors"] = lines[:MAX_LINES]
    if lines:
        _damage(report, INDEX, f"search index file {path.name}: {lines[0]}")


def _check_schema(conn: apsw.Connection, report: Report) -> set[str]:
    """The schema check open runs too (schema.py); the names of broken entries."""
    try:
        findings = schema_findings(conn)
    except apsw.Error as exc:
        _damage(report, STRUCTURAL, f"the migration record cannot be read ({exc})")
        return set()
    for finding in findings:
        _damage(report, finding.cls, finding.text)
    return {f.name for f in findings}


def _no_room(report: Report, what: str, exc: BaseException) -> bool:
    """Whether `exc` is a lack of space; if so it is noted as a check left undone, never as
    damage (S-48)."""
    if classify(exc) is not Cause.DISK_FULL:
        return False
    report.disk["full"] = True
    report.findings.append(f"{what}: the disk is full ({exc}); nothing is known to be damaged")
    return True


def _check_disk(db_path: Path, report: Report, *, shm_missing: bool) -> None:
    """Free space against what writing to the store needs: the pages its WAL still owes the
    main file, a -shm when there is none, and WRITE_ROOM for the next writes."""
    space = forensics.statvfs_space(db_path.parent)
    if space is None:
        return
    owed = 0
    if report.page_count and report.page_size:
        owed = max(0, report.page_count * report.page_size - report.size)
    free, needed = space[0], owed + (SHM_BYTES if shm_missing else 0) + WRITE_ROOM
    full = report.disk.get("full", False) or free < needed
    report.disk = {"free": free, "needed": needed, "full": full}
    if full:
        intact = "; the store itself is not damaged" if report.damage == NONE else ""
        report.problems.insert(0, f"The disk holding {db_path} is full: {_size(free)} free, and the store needs "
                                  f"{_size(needed)} to take writes again{intact}.")


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB"


def _disk_steps(db_path: Path, report: Report, command: str) -> list[str]:
    """Out of space (S-48): free it; never recover or move files, nothing is damaged."""
    short = max(0, report.disk["needed"] - report.disk["free"])
    intact = ", and do not recover into a new file: the store is not damaged" if report.damage == NONE else ""
    return [
        f"Free at least {_size(short) if short else 'some space'} on the disk holding {db_path.parent} "
        f"(`df -h {db_path.parent}` shows it); do not delete {db_path.name}-wal or {db_path.name}-shm{intact}.",
        f"Then run `{command} doctor` again; the next write checkpoints the log into the store.",
    ]


def _damage(report: Report, cls: str, finding: str, problem: str | None = None) -> None:
    """Record damage: `finding` as the check said it, `problem` as a person reads it."""
    report.damage = worse(report.damage, cls)
    report.findings.append(finding)
    problem = problem or finding
    if problem not in report.problems:
        report.problems.append(problem)


_OBJECT = re.compile(r"(search index|index|table) ?([^:\s]*): ")


def _in_words(cls: str, finding: str) -> str:
    """What an integrity-check finding means for a person: which part of the store is
    damaged and whether sessions may be lost. SQLite's own words stay in the findings."""
    named = _OBJECT.match(finding)
    kind, name = (named.group(1), named.group(2)) if named else ("", "")
    if cls == INDEX:
        return ("The search index is damaged: every message is intact, but searches may miss some until "
                "it is rebuilt")
    if cls == SCHEMA:
        what = f"The index {name}" if kind == "index" and name else "Part of the store's schema"
        return f"{what} is damaged: the rows themselves are intact, and the migrations can recreate it"
    where = f"part of its {name} table" if kind == "table" and name else "some of its pages"
    return f"The store file is damaged: {where} cannot be read as SQLite wrote it, so some of what it held may be lost"


def restore_step(db_path: Path) -> list[str]:
    """Restoring a copy, when one exists: a `sessiondb backup` copy, else the newest forensic set."""
    made = copies.existing(db_path)
    if made:
        return [f"If the backup {made[0]} (made with `sessiondb backup`) holds what you need, restore it instead "
                f"of recovering: with every process stopped, move the damaged files aside ({db_path}, -wal, "
                f"-shm) and copy {made[0]} to {db_path}."]
    sets = forensics.list_sets(db_path)
    if sets:
        return [f"To go back to the state before the last repair, restore the forensic backup {sets[-1]}: with "
                f"every process stopped, move the damaged files aside and copy it (and its -wal, if any) to "
                f"{db_path} (and {db_path.name}-wal)."]
    return []


def recover_steps(db_path: Path, command: str) -> list[str]:
    new = db_path.with_name(db_path.name + ".recovered")
    return [
        "Quit every process using this store (gateway, desktop app, CLI, cron jobs); do not delete "
        f"{db_path.name}-wal or {db_path.name}-shm, and do not copy files over the store.",
        *restore_step(db_path),
        f"Run `{command} recover --source {db_path} --output {new}`: it rebuilds what is readable into a "
        "new file and reports what it kept and lost; the damaged file is never touched.",
        f"With every process still stopped, move the damaged files aside ({db_path}, -wal, -shm) and move "
        f"{new} to {db_path}; keep the damaged files and {db_path.parent / 'backups'} until you are satisfied.",
    ]


def way_back_step(report: Report, command: str) -> list[str]:
    """`restore-captured`, when captures or spooled batches wait for it (S-49): it brings the
    captures back before the spool, in the order they were written, and marks them."""
    if not report.way_back:
        return []
    other = report.way_back.get("other_generations") or report.way_back.get("spool_other_generations")
    flag = " --other-generations" if other else ""
    why = ("Some were written for the file this one replaced: the flag says to bring them into this file; "
           "`--into NEW` brings everything into a new store instead. " if other else "")
    return [f"Run `{command} restore-captured{flag}`: it brings every message captured beside the store or kept "
            f"in its spool back into it, by uid (running it again stores nothing twice). {why}"
            "It reports what came back per session."]


def advise(report: Report, db_path: Path, command: str) -> None:
    if report.disk.get("full"):
        # Nothing the doctor could do, and nothing a recovery would write, fits on the disk.
        report.steps = _disk_steps(db_path, report, command)
        return
    way_back = [] if report.damage == STRUCTURAL else way_back_step(report, command)
    if report.damage == STRUCTURAL:
        report.steps = recover_steps(db_path, command)
    elif report.damage in (INDEX, SCHEMA) or (report.spool_pending and not way_back):
        if report.holders:
            report.steps.append(f"Quit the processes holding the store ({', '.join(report.holders)}), then run "
                                f"`{command} doctor --repair`.")
        else:
            report.steps.append(f"Run `{command} doctor --repair`.")
    report.steps.extend(step for step in way_back if step not in report.steps)
    if report.repair_failures >= ledger.MAX_FAILED and report.damage != NONE:
        report.steps = [f"Repair already failed {report.repair_failures} times on this file; it will not be "
                        "tried again."] + recover_steps(db_path, command)
