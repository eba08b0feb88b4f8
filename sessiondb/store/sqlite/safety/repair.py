"""Repair: heal the `index` and `schema` damage classes in place, then replay the spool
and checkpoint (doctor.py describes the classes).

A repair runs only when no other process holds the store and this process has no
connection on it (S-22), only after a forensic backup (S-21), and only within the
ledger's budget (S-20). Its connection uses `synchronous=FULL`. Damaged indexes,
triggers and views are recreated from the frozen SQL of the migrations the file
records; the search index's own file is deleted (it is derived data, built again from
the messages at the next open), and the in-file indexes of stores before migration 0006
are rebuilt in place.

The spool is replayed by the caller's `replay` (the store opened normally: replay is a
store operation, not surgery), called only once the file is healthy and nobody else
holds it.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Callable

import apsw

from ....errors import SessionDBError, StoreHeld
from ....files import descriptors_of
from ....home import SIDECAR_SUFFIXES
from ....model import SpoolReport
from ..index import schema as index_schema
from ..connect import busy_handler
from . import containment, forensics, ledger, walowner
from .examine import STALE_KEY, Report, advise, examine, recover_steps
from .holders import holders
from .integrity import INDEX, NONE, SCHEMA, STRUCTURAL
from .schema import DEDUPE, RECORD, RECREATE, applied_migrations, reference_schema, schema_findings

Replay = Callable[[], SpoolReport]


class RepairRefused(SessionDBError):
    """The repair did not run (held store, exhausted budget, no backup); nothing was changed."""


def repair(db_path: Path | str, *, command: str = "sessiondb", deep: bool = False,
           free_space: forensics.FreeSpace = forensics.statvfs_space, replay: Replay | None = None) -> Report:
    """Heal the index and schema classes in place; replay the spool; checkpoint.

    `replay` replays the spool through the store opened normally (the faces pass
    `lambda: <open_store(path)>.replay_spool()`); it is called once the file is healthy
    and only when batches are pending. Without it a pending spool is left as it is (the
    report still counts it).

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
    if before.disk.get("full"):
        # Every repair writes (a backup, the log checkpointed into the store): none fits.
        before.repair = {"actions": ["nothing done: the disk is full"], "backup": None}
        return before
    if before.way_back.get("foreign_wal") and not holders(db_path):
        # A replaced file's WAL is set aside before anything here opens the file, which would
        # replay it over the file that replaced it (S-28); restore-captured reads it from there.
        kept = walowner.set_aside_foreign_wal(db_path)
        if kept is not None:
            actions.append(f"set the write-ahead log of the replaced file aside, unreplayed, in {kept}")
            before = examine(db_path, deep=deep, command=command)
    if before.damage in (INDEX, SCHEMA):
        _refuse_if_held(db_path)
    if before.damage == NONE:
        # A healthy file (repaired or restored since) owes nothing to the ledger: the sample
        # can miss where a restore differs from the damaged file, so the shape is cleared.
        ledger.record_success(db_path, ledger.file_key(db_path))
        _replay_and_checkpoint(db_path, before, actions, replay)
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
        containment.forget_healed(db_path)  # the write that found the damage may be spooled
        _replay_and_checkpoint(db_path, after, actions, replay)
        after = examine(db_path, deep=deep, command=command)
        failed = 0
    else:
        failed = ledger.record_failure(db_path, key, ledger.file_key(db_path), "; ".join(after.findings[:3]))
        after.repair_failures = failed
        advise(after, db_path, command)
    after.repair = {"actions": actions, "backup": str(backup.main), "failed_passes": failed}
    return after


def _refuse_if_held(db_path: Path) -> None:
    held_by = holders(db_path)
    if held_by:
        names = ", ".join(map(str, held_by))
        raise StoreHeld(f"repair refused: {db_path} is held by {names}; quit those processes and run "
                        "`doctor --repair` again", held_by)
    if any(descriptors_of(str(db_path) + s) for s in ("",) + SIDECAR_SUFFIXES):
        raise RepairRefused(f"repair refused: this process has {db_path} open; close every store handle on it "
                            "first")


def repair_connection(db_path: Path) -> apsw.Connection:
    """A private writable connection with full durability barriers."""
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
    conn = repair_connection(db_path)
    try:
        if report.damage == SCHEMA:
            _repair_schema(conn, report, actions)
        if report.damage == INDEX or report.index_stale or any("search index" in f for f in report.findings):
            index_schema.remove(db_path)
            actions.append("deleted the search index file; it is built again from the messages at the next open")
            with conn:
                _rebuild_in_file_indexes(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _rebuild_in_file_indexes(conn: apsw.Connection) -> None:
    """A store before migration 0006 keeps its FTS5 tables in the file: rebuild them."""
    for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                "AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'").fetchall():
        conn.execute(f'INSERT INTO "{name}"("{name}") VALUES (\'rebuild\')')
    conn.execute("DELETE FROM store_meta WHERE key = ?", (STALE_KEY,))


def _repair_schema(conn: apsw.Connection, report: Report, actions: list[str]) -> None:
    """Act on each schema finding (schema.py): write a half-migrated file's missing records,
    delete extra identical entries, and drop the entries of damaged indexes, triggers and
    views to create them again from the migrations' SQL. Entries are removed from
    sqlite_schema directly (DROP would have to walk a damaged b-tree); the pages they leave
    behind are reclaimed by a VACUUM."""
    conn.execute("PRAGMA writable_schema=ON")
    findings = schema_findings(conn)
    with conn:
        for f in findings:
            if f.action == RECORD:
                conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)", (f.name, time.time()))
                actions.append(f"recorded migration {f.name}, whose objects were all there")
            elif f.action == DEDUPE:
                conn.execute("DELETE FROM sqlite_schema WHERE name = ?1 AND rowid != "
                             "(SELECT min(rowid) FROM sqlite_schema WHERE name = ?1)", (f.name,))
                actions.append(f"deleted the extra entries of {f.name}")
    reference = reference_schema(applied_migrations(conn) or frozenset())
    damaged = set(_damaged_indexes(report)) | {f.name for f in findings if f.action == RECREATE}
    redo = [(kind, name, sql) for name, (kind, _table, sql) in reference.items()
            if kind in ("index", "trigger", "view") and sql is not None and name in damaged]
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


def _replay_and_checkpoint(db_path: Path, report: Report, actions: list[str], replay: Replay | None) -> None:
    """Replay the spool through the store itself (the caller's `replay`), then checkpoint
    when nobody else holds the store."""
    if report.spool_pending and report.way_back:
        # Replayed now, a refused batch would land before the captured commits it followed;
        # restore-captured brings back both, in order (examine.way_back_step names it).
        actions.append("spool left for restore-captured, which brings back the captures it follows first")
    elif report.spool_pending and replay is not None:
        result = replay()
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
