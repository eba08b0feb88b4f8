"""SQLiteBackend: the backend primitives (store/backend.py) on one embedded SQLite file.

A thin adapter: each primitive runs the SQL module that owns it as a unit of work on the
file's one writer (group commit) or in one read transaction on a pooled read connection.
Input arrives validated, as typed commands, from the neutral layer (store/checked.py).
"""

from __future__ import annotations

import os
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import apsw

from ...errors import InvalidInput, StoreClosed
from ...model import (
    MaintenanceReport, SearchHit, VerifyReport,
)
from .. import commands as cmd
from ..rows import Rows
from ..sql import Dialect, SQLRows
from ..text import ESCAPED_COLUMNS, from_stored, to_stored
from . import maintenance, registry, search, verify
from .connect import DEFAULT_PATIENCE, check_sqlite_version
from .errors import convert
from .safety import copies

T = TypeVar("T")

#: SQLite's spelling of what store/sql.py writes once: its writes take turns file-wide, so
#: a row read in a write transaction needs no lock to stay as read.
DIALECT = Dialect(
    name="sqlite", mark="?", lock="",
    next_token="UPDATE store_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
               "WHERE key = 'compaction_token' RETURNING value",
    inserted={"sessions": "rowid", "messages": "id", "turns": "seq"},
    duplicate=lambda exc: isinstance(exc, apsw.ConstraintError) and "UNIQUE constraint failed" in str(exc),
    codecs={("messages", column): (to_stored, from_stored) for column in ESCAPED_COLUMNS},
)


class SQLiteBackend:
    """One handle on one SQLite store file; many handles share the file's one writer."""

    def __init__(
        self,
        path: Path,
        *,
        profile: str | None = None,
        durability: str = "full",
        patience: float = DEFAULT_PATIENCE,
        vfs: str | None = None,
    ) -> None:
        check_sqlite_version(apsw.sqlite_lib_version())
        self._durability = durability  # checked, as patience is, by open_store (store/locations.py)
        self.path = path
        self.location = str(path)
        self.spool_anchor = path
        self._closed = threading.Event()
        self._file = registry.acquire(path, durability=durability, patience=float(patience), vfs=vfs)

    @property
    def generation(self) -> str | None:
        """The generation stamp of the file this handle opened (see Backend)."""
        return self._file.containment.generation

    @property
    def journal_mode(self) -> str:
        return self._file.journal_mode

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        registry.release(self._file, self._durability)

    def write(self, work: Callable[[Rows], T]) -> T:
        """`work` on the store's rows in one write transaction (see Backend.write)."""
        return self._write(lambda conn: work(SQLRows(conn, DIALECT)))

    def read(self, work: Callable[[Rows], T]) -> T:
        """`work` on the store's rows in one read snapshot (see Backend.read)."""
        return self._read(lambda conn: work(SQLRows(conn, DIALECT)))

    def stream(self, work: Callable[[Rows], Iterator[T]]) -> Iterator[T]:
        """What `work` yields from the store's rows, in one read snapshot (see Backend.stream)."""
        self._check_open()
        try:
            with self._file.reader() as conn:
                conn.execute("BEGIN")
                yield from work(SQLRows(conn, DIALECT))
        except apsw.Error as exc:
            raise convert(exc) from None

    def _write(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        try:
            return self._file.writer.run(work)
        finally:
            # The index follows after the acknowledgement: its thread is woken, unless a
            # batch is gathering already (an Event set and never waited on here).
            wanted = self._file.indexer.wanted
            if not wanted.is_set():
                wanted.set()

    def _read(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        return self._file.read(work)

    def index_lag(self) -> tuple[int, float]:
        """(messages stored but not yet in the search index, seconds since the index last
        covered the store while it is behind, else 0), for telemetry's gauges."""
        self._check_open()
        indexed, caught_up_at = self._file.indexer.marks()[0], self._file.indexer.caught_up_at
        behind = self._read(lambda conn: conn.execute("SELECT count(*) FROM messages WHERE id > ?",
                                                      (indexed,)).fetchone()[0])
        return behind, (time.monotonic() - caught_up_at if behind else 0.0)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        if self._file.retired:  # replaced underneath and closed (registry.py)
            raise self._file.retired_error()

    # --- search, statistics, integrity --------------------------------------------

    def search(self, query: cmd.Search) -> list[SearchHit]:
        fields = {name: getattr(query, name) for name in query.__slots__}
        self._check_open()
        return self._file.search(lambda conn, touched_to: search.search(conn, touched_to=touched_to, **fields))

    def recall(self, query: cmd.Search) -> list[SearchHit]:
        fields = {name: getattr(query, name) for name in query.__slots__
                  if name not in ("query", "include_reasoning")}  # a recall never reads reasoning
        self._check_open()
        return self._file.search(lambda conn, touched_to: search.recall(conn, query.query, touched_to=touched_to,
                                                                        **fields))

    def footprint(self) -> tuple[int, int]:
        """The bytes of the file and its WAL together, and of the WAL (see Backend)."""
        size, wal = _file_size(self.path), _file_size(Path(f"{self.path}-wal"))
        return size + wal, wal

    def check(self, logical: Callable[[Rows, int, VerifyReport], None]) -> VerifyReport:
        # Read like a search: the index caught up to this snapshot first (if it can be), then checked.
        self._check_open()
        return self._file.examine(lambda conn, touched_to: verify.verify(conn, touched_to, SQLRows(conn, DIALECT),
                                                                         logical))


    # --- maintenance (S-19) --------------------------------------------------------------

    def backup(self, destination: Path) -> int:
        if destination == self.path:
            raise InvalidInput("the backup must go to a new file, not the store itself")
        self._check_open()
        with self._file.reader() as conn:
            size = maintenance.backup(conn, destination)
        copies.remember(self.path, destination, size)  # the doctor names it as a restore step
        return size

    def optimize(self, *, force: bool, dry_run: bool) -> MaintenanceReport:
        """Bring the search index up to date and merge its segments (rebuilt from nothing if
        it was found damaged), sweep the log it has applied, then optimize the store."""
        def work(conn: apsw.Connection) -> None:
            maintenance.optimize(conn, self._file.indexer.optimize())
        return self._maintain("optimize", work, force=force, dry_run=dry_run)

    def vacuum(self, *, force: bool, dry_run: bool) -> MaintenanceReport:
        return self._maintain("vacuum", maintenance.vacuum, force=force, dry_run=dry_run)

    def prune(self, command: cmd.Prune) -> MaintenanceReport:
        queries = []
        if command.inactive_before is not None:
            queries.append(maintenance.older_than_sql(command.inactive_before, include_pinned=command.include_pinned,
                                                      include_archived=command.include_archived))
        if command.never_active_at is not None:
            queries.append(maintenance.never_active_sql(command.never_active_at))
        pick = maintenance.select_ids if command.dry_run else maintenance.delete_sessions
        work = partial(maintenance.sessions_matching, queries=queries, pick=pick)
        return self._maintain("prune", work, force=command.force, dry_run=command.dry_run, rewrites=False)

    def _maintain(self, action: str, work: Callable[[apsw.Connection], Any], *, force: bool, dry_run: bool,
                  rewrites: bool = True) -> MaintenanceReport:
        """Run `work` unless another process holds the store (S-19). A rewrite (optimize,
        vacuum) runs outside a transaction; a dry run previews without writing."""
        self._check_open()
        before = maintenance.store_bytes(self.path)
        if dry_run:
            warnings, result = [], None if rewrites else self._read(work)
        else:
            warnings = maintenance.check_unheld(self.path, action, force=force)
            result = self._file.writer.run(work, in_transaction=not rewrites)
        return MaintenanceReport(action, dry_run, before, maintenance.store_bytes(self.path),
                                 sessions=result or [], warnings=warnings)


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size  # a stat by path: no descriptor on the live file
    except FileNotFoundError:
        return 0
