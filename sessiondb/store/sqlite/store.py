"""SQLiteBackend: the backend primitives (store/backend.py) on one embedded SQLite file.

A thin adapter: each primitive runs the SQL module that owns it as a unit of work on the
file's one writer (group commit) or in one read transaction on a pooled read connection.
Input arrives validated, as typed commands, from the neutral layer (store/checked.py).

Every handle on a file in this process shares one SharedFile (the last section), keyed by
the file's identity (device, inode), so two paths to one file (a symlinked home, a bind
mount) still share one writer. Each open takes a reference; closing a handle drops its
reference and the last one stops the writer and closes the read connections, so a handle
closed by one caller never tears down a writer another caller holds.

After fork() the child must not touch connections it inherited (their locks belong to
the parent): the shared files are forgotten without being closed.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple, TypeVar

import apsw

from ... import home as homes
from ...embedding import Embedder, EmbedderFailed, Space, other_space
from ...errors import Cause, DiskFull, InvalidInput, StoreClosed, StoreDamaged
from ...files import claim_private
from ...model import (
    COMPRESSION, MaintenanceReport, Message, SearchHit, VerifyReport,
)
from .. import commands as cmd
from ..backend import Traces
from ..rows import Rows
from ..sql import (
    ESCAPED_COLUMNS, Dialect, SQLRows, from_stored, insert_new_messages, message_row, session_added, stored_message,
    to_stored,
)
from . import maintenance, search, verify
from .connect import (
    CACHE_KIB, DEFAULT_PATIENCE, check_sqlite_version, configure_reader, configure_writer, connect, set_durability,
)
from .errors import convert
from .index import schema as index_schema
from .index import matrix
from .index.indexer import EMBEDDED_MARKS, INDEX_MARKS, STORE_MARKS, Indexer
from .index.matrix import Matrix
from .migrations import check_ownership, migrate
from .safety import captures, copies, forensics
from .safety.containment import (
    Containment, damaged_error, forget_replaced, no_checkpoint_on_close, refuse_if_damaged,
)
from .safety.holders import holders
from .safety.probe import startup_probe, unclean_shutdown
from .safety.schema import refuse_damaged_schema
from .safety.walowner import set_aside_foreign_wal
from .writer import WalSync, Writer

T = TypeVar("T")
READERS = 4  # read connections per file; readers never wait for the writer in WAL


#: SQLite's spelling of what store/sql.py writes once: its writes take turns file-wide, so
#: a row read in a write transaction needs no lock to stay as read.
DIALECT = Dialect(
    name="sqlite", mark="?", lock="",
    next_token="UPDATE store_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
               "WHERE key = 'compaction_token' RETURNING value",
    inserted={"sessions": "rowid", "messages": "id", "turns": "seq"},
    duplicate=lambda exc: isinstance(exc, apsw.ConstraintError) and "UNIQUE constraint failed" in str(exc),
    codecs={("messages", column): (to_stored, from_stored) for column in ESCAPED_COLUMNS},
    # SQLite scans and sorts every session rather than read an index serving the order's
    # first term (10 ms for 50,000 sessions against 0.1 ms); a listing filters on no
    # indexed column, so the minute's index is always its way in.
    recent_index=" INDEXED BY sessions_active_minute",
)


# --- SQLite's own way to store the common append ----------------------------------------
#
# The append's rules are written once (store/lineage.py); most appends are their common
# case, a batch of new uids for a session that no compaction rotated or continued, which
# they store by locking the session's row and reading its newest seq, inserting the rows
# one past it and adding them to the session's counters and activity. Here that case is
# at most three statements on the writer's connection, whose transaction already holds the
# file's write lock: the head read as one row (left out when the writer's last append, to
# the same session, left it and nothing has written since: LastAppend), the batch as one
# INSERT, the session's update; and
# whatever else the rules must decide (a session missing, rotated or continuing another, a
# uid stored already or given twice) goes to them, with nothing written here. PostgreSQL
# does the same in one server-side function (postgres/messages.py's append_fresh).

#: The session's ending, how it continues its parent, and its newest message's seq (0 without one).
_HEAD = ("SELECT end_reason, parent_relation, "
         "coalesce((SELECT seq FROM messages WHERE session_id = ?1 ORDER BY id DESC LIMIT 1), 0) "
         "FROM sessions WHERE id = ?1")
#: sql.py's add_to_session as one prepared statement: Rows.update's `add` and `greatest`
#: spelled out, without building the statement and its values for every append (30k
#: instructions of one, bench/exact.py).
_ADDED = ("UPDATE sessions SET message_count = message_count + ?1, tool_call_count = tool_call_count + ?2, "
          "last_activity_at = CASE WHEN last_activity_at IS NULL OR last_activity_at < ?3 THEN ?3 "
          "ELSE last_activity_at END WHERE id = ?4")


class LastAppend(NamedTuple):
    """The session the last common append wrote to, its newest seq then, and the marks
    that show nothing has written to the file since: a lone writer's next append to the
    same session takes its head from here rather than reading it.

    The head is as the append left it while three things hold: the transaction it was
    written in committed with nothing of it undone, and was the writer's last to commit
    (`Writer.kept_whole`); the connection has changed no row since (`total_changes`); and
    the file's data version moved by that one commit alone (`data_version`, which counts
    this connection's commits and every other connection's, noticed as a transaction
    begins). Anything else that could move the head (another process's append, an end, a
    rotation, a removal, a rollback) breaks one of them, and the head is read again."""

    session_id: str
    last_seq: int
    transaction: int
    changes: int
    version: int


def _fresh(conn: apsw.Connection, command: cmd.Append, file: "SharedFile") -> list[Message] | None:
    """`command` stored as the rules' append stores its common case; None, with nothing
    written, when it is not that case."""
    session_id, batch = command.session_id, command.batch
    last, writer = file.last_append, file.writer
    if (last is not None and last.session_id == session_id and last.transaction == writer.kept_whole
            and last.changes == conn.total_changes() and last.version + 1 == conn.data_version()):
        last_seq = last.last_seq
    else:
        head = conn.execute(_HEAD, (session_id,)).fetchone()
        if head is None or head[0] == COMPRESSION or head[1] == COMPRESSION:
            return None
        last_seq = head[2]
    rows = [message_row(session_id, m, seq, command.now) for seq, m in enumerate(batch, last_seq + 1)]
    ids = insert_new_messages(conn, DIALECT, rows)
    if ids is None:  # a uid stored already, or given twice
        return None
    active, calls, activity = session_added(batch, [row[12] for row in rows])
    if active:  # activity None leaves the time as it is: NULL stays NULL, and `< NULL` is not true
        conn.execute(_ADDED, (active, calls, activity, session_id))
    file.last_append = LastAppend(session_id, rows[-1][2], writer.transactions, conn.total_changes(),
                                  conn.data_version())
    return [stored_message((ids[row[1]], *row)) for row in rows]


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
        embedder: Embedder | None = None,
    ) -> None:
        check_sqlite_version(apsw.sqlite_lib_version())
        self._durability = durability  # checked, as patience is, by open_store (store/locations.py)
        self.path = path
        self.location = str(path)
        self.spool_anchor = path
        self._closed = threading.Event()
        if embedder is not None:  # refused at the open, not at the first recall
            matrix.numpy()
        self._file = acquire(path, durability=durability, patience=float(patience), vfs=vfs, embedder=embedder)

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
        release(self._file, self._durability)

    def write(self, work: Callable[[Rows], T]) -> T:
        """`work` on the store's rows in one write transaction (see Backend.write)."""
        return self._write(lambda conn: work(SQLRows(conn, DIALECT)))

    def write_append(self, command: cmd.Append, work: Callable[[Rows], list[Message]]) -> list[Message]:
        """The common append in at most three statements (`_fresh`), else `work`, the rules' own
        append, in the same unit of work (see backend.AppendingBackend)."""
        return self._write(lambda conn: _fresh(conn, command, self._file) or work(SQLRows(conn, DIALECT)))

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
        if self._file.retired:  # replaced underneath and closed (SharedFile.retire)
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
        question, indexer = query.query, self._file.indexer
        if question.meaning is not None:
            indexer.catch_up(vectors=True)  # the words too: the search below finds them caught up

        def work(conn: apsw.Connection, touched_to: int) -> list[SearchHit]:
            asked, why = question, None
            embedded_touched_to, space = conn.execute(EMBEDDED_MARKS).fetchone()[1:]
            if asked.meaning is not None:
                why = indexer.vectors_trouble or (other_space(space, asked.space) if space != asked.space else None)
                if why is not None:
                    asked = replace(asked, meaning=None)
            hits = search.recall(conn, asked, touched_to=touched_to, embedded_touched_to=embedded_touched_to,
                                 matrix=self._file.matrix(), key=(indexer.generation, embedded_touched_to, space),
                                 **fields)
            return hits if why is None else [replace(hit, note=why) for hit in hits]

        return self._file.search(work)

    def rebuild_vectors(self) -> int:
        self._check_open()
        indexer = self._file.indexer
        indexer.forget_vectors()
        indexer.catch_up(vectors=True)
        if indexer.vectors_trouble is not None:
            raise EmbedderFailed(indexer.vectors_trouble)
        return indexer.vectors_held()

    def scrub(self) -> Traces:
        """The writer deletes with secure_delete on (connect.py), so what remains of deleted
        rows is in the WAL's older frames and in the search index: the index is purged,
        then both logs are reset. Backups and retired-WAL captures are copies this backend
        made and does not rewrite."""
        self._check_open()
        self._file.indexer.purge()
        self._file.writer.run(lambda conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall(),
                              in_transaction=False)
        index = index_schema.path_of(self.path)
        index_remedy = (f"the search index is derived data: with the store's processes stopped, delete {index} "
                        "and it is rebuilt at the next open")
        owned = [
            (self.path, "pages it freed before this release turned on overwriting still hold it: "
                        "`sessiondb sessions vacuum` rewrites the file (with the store's other processes stopped)"),
            (Path(f"{self.path}-wal"), "another process was reading the store as its log was reset: "
                                       "`sessiondb sessions optimize` resets it once no process reads"),
            *((Path(f"{self.path}{suffix}"), index_remedy) for suffix in index_schema.FILES),
        ]
        backups = copies.existing(self.path)
        copies_made = [(path, f"rm {path}  (a backup taken before the erasure)") for path in backups]
        copies_made += [(path, f"rm {path}  (a forensic copy taken before a repair)")
                        for path in sorted(forensics.backup_dir(self.path).rglob("*"))
                        if path.is_file() and path not in backups]  # a backup may be kept in the same folder
        disposable = []
        for folder in captures.folders(self.path):
            if (captures.manifest_of(folder) or {}).get("restored"):
                disposable.append(folder)  # brought back already: the store holds what it held
            else:
                copies_made.append((folder, "`sessiondb restore-captured`, then `sessiondb forget` again with the "
                                            f"same selectors, then rm -r {folder}"))
        return Traces(owned=owned, copies=copies_made, disposable=disposable)

    def release_space(self) -> int:
        """Free pages handed back RELEASE_STEP at a time, each step a write of the writer (so
        appends interleave), in a file that keeps a map of its pages (connect.py: every file
        made since; an older one gains it at `sessiondb sessions vacuum`); the file shrinks
        at the next checkpoint."""
        self._check_open()
        released = 0
        while (step := self._file.writer.run(maintenance.release_step)) > 0:
            released += step
        return released

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

    def _maintain(self, action: str, work: Callable[[apsw.Connection], Any], *, force: bool,
                  dry_run: bool) -> MaintenanceReport:
        """Rewrite the file with `work`, outside a transaction, unless another process holds
        the store (S-19); a dry run says what the file weighs and writes nothing."""
        self._check_open()
        before = maintenance.store_bytes(self.path)
        warnings = []
        if not dry_run:
            warnings = maintenance.check_unheld(self.path, action, force=force)
            self._file.writer.run(work, in_transaction=False)
        return MaintenanceReport(action, dry_run, before, maintenance.store_bytes(self.path), warnings=warnings)


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size  # a stat by path: no descriptor on the live file
    except FileNotFoundError:
        return 0


# --- the file every handle in this process shares -------------------------------------


class SharedFile:
    """The writer and the read pool of one database file, shared by every handle on it."""

    def __init__(self, path: Path, *, durability: str, patience: float, vfs: str | None,
                 embedder: Embedder | None = None) -> None:
        self.path = path
        self.key: tuple[int, int] | None = None
        self.refs = 0
        self._durabilities: Counter[str] = Counter()
        self._patience = patience
        self._vfs = vfs
        self._idle: queue.LifoQueue[apsw.Connection] = queue.LifoQueue()
        self._readers = threading.BoundedSemaphore(READERS)
        self._readers_lock = threading.Lock()
        self._all_readers: list[apsw.Connection] = []
        self.journal_mode = ""
        self.containment = Containment(path)
        self.retired = False  # replaced underneath and closed: every handle left on it is refused
        self.full: DiskFull | None = None  # opened for reading only, the disk being full
        self._wal_sync: WalSync | None = None  # made once the writer has the WAL open
        self.last_append: LastAppend | None = None  # written by the writer's connection only
        self._sync_at_open: WalSync | None = None  # the sync after COMMIT the writer opened with
        try:
            self.writer: Writer | FullDisk = Writer(
                lambda: self._open_writer(durability),
                name=f"sessiondb-writer:{path}",
                before_group=self.containment.before_group,
                on_error=self.containment.on_error,
            )
        except DiskFull as full:
            if not readable_from_the_main_file(path):
                raise
            # Reads need no room: the main file alone holds a cleanly closed store, read
            # without the -shm that could not grow. Writes are refused with the same cause.
            self.full = full
            self.writer = FullDisk(full)
        else:
            self.writer.set_sync(self._sync_at_open)  # no write can have been submitted yet
        # The search index, off the acknowledgement path (invariant 9): its own file and
        # thread; readers attach it (at the indexer's generation) when they search.
        self.indexer = Indexer(path, patience=patience, vfs=vfs, embedder=embedder)
        self._matrix: Matrix | None = None
        self._attached: dict[int, int] = {}
        if self.full is None:
            self._adopt_index()

    def _adopt_index(self) -> None:
        """Open the index now, before this process writes: an index left ahead of the store
        (a power cut at durability normal lost the store's last commits) is started over
        before new rows could take the lost ids. Its trouble never stops the store opening."""
        try:
            self.indexer.marks()
        except apsw.Error as exc:
            try:
                self.indexer.heal(exc)
            except apsw.Error:
                pass  # searches report it; writes never depend on the index

    def _open_writer(self, durability: str) -> apsw.Connection:
        homes.ensure_private_dir(self.path.parent)
        # SQLite gives the WAL and shm the main file's mode: a main file made 0600 before
        # SQLite first sees it leaves no moment in which any of them is readable by others.
        claim_private(self.path, homes.SIDECAR_SUFFIXES)
        conn = None
        try:
            # Before SQLite sees the files: a WAL written for a file since replaced is set
            # aside, never read over the main file that replaced it (S-13).
            set_aside_foreign_wal(self.path)
            unclean = unclean_shutdown(self.path)  # a WAL left behind that nobody holds
            conn = connect(self.path, patience=self._patience, vfs=self._vfs)
            # Refuse a file that is not ours before changing anything about it.
            check_ownership(conn)
            refuse_damaged_schema(conn, self.path)  # what the doctor would report, open refuses
            if unclean:
                startup_probe(conn, self.path)  # structural damage stops us before any write
            # Tighten a file that was already there before the first write creates the
            # WAL, which SQLite gives the main file's mode.
            homes.make_private(self.path)
            self.journal_mode = configure_writer(conn, self.path, durability, patience=self._patience)
            if migrate(conn) and self.journal_mode == "wal":
                # Put a new file's identity page into the main file now, so a copy over
                # the store is recognised from the first write on.
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            homes.make_private(self.path)
            self.containment.attach(conn, self.journal_mode)
            self._sync_at_open = self._set_durability(conn, durability)
        except BaseException as exc:
            if conn is not None:
                # An open that failed (foreign, newer, damaged file) leaves the file as it was.
                no_checkpoint_on_close(conn)
                conn.close()
            raise convert(exc, self.path) from None
        return conn

    # --- durability: the strictest any open handle asked for --------------------------

    def matrix(self) -> Matrix:
        """The file's vectors in memory (index/matrix.py), made at the first recall that needs them."""
        with self._readers_lock:
            if self._matrix is None:
                self._matrix = Matrix()
            return self._matrix

    def use(self, embedder: Embedder | None) -> None:
        """A handle opened with `embedder`: the first one this process gives computes the
        store's vectors; another embedder's handle is refused (its vectors would be another
        space's)."""
        current = self.indexer.embedder
        if embedder is None or current is embedder:
            return
        if current is not None and Space.of(current) != Space.of(embedder):
            raise InvalidInput(f"this process has the store open with the embedder {Space.of(current).key}; "
                               f"a handle with {Space.of(embedder).key} would mix their vectors")
        self.indexer.embedder = current or embedder

    def hold(self, durability: str) -> None:
        self.refs += 1
        before = self._effective()
        self._durabilities[durability] += 1
        self._apply_if_changed(before)

    def unhold(self, durability: str) -> int:
        before = self._effective()
        self._durabilities[durability] -= 1
        self.refs -= 1
        if self.refs:
            self._apply_if_changed(before)
        return self.refs

    def _effective(self) -> str:
        return "full" if self._durabilities["full"] or not self._durabilities else "normal"

    def _apply_if_changed(self, before: str) -> None:
        after = self._effective()
        if after != before and self.full is None:
            self.writer.run(lambda conn: self.writer.set_sync(self._set_durability(conn, after)),
                            in_transaction=False)

    def _set_durability(self, conn: apsw.Connection, durability: str) -> WalSync | None:
        """Set the writer's connection for `durability`; returns the sync to run after COMMIT.
        "full" in WAL syncs after COMMIT, outside the write lock (writer.py), when the WAL's
        file can be had for it; else SQLite syncs in COMMIT (or, at "normal", nothing does)."""
        after_commit = durability == "full" and self.journal_mode == "wal"
        if after_commit and self._wal_sync is None:
            self._wal_sync = WalSync.of(self.path, self._vfs)
        sync = self._wal_sync if after_commit else None
        set_durability(conn, "normal" if sync is not None else durability)
        return sync

    # --- reads -------------------------------------------------------------------------

    @contextmanager
    def reader(self) -> Iterator[apsw.Connection]:
        """A read connection for the duration of the block (at most READERS at once)."""
        self._readers.acquire()
        try:
            try:
                conn = self._idle.get_nowait()
            except queue.Empty:
                conn = connect(self.path, patience=self._patience, vfs=self._vfs, immutable=self.full is not None)
                conn.execute(index_schema.TERMS)
                configure_reader(conn)
                with self._readers_lock:
                    self._all_readers.append(conn)
            try:
                yield conn
            finally:
                # Every read's snapshot ends here; not at all when SQLite ended it itself
                # (an I/O error), so that the error raised is that one (connect.transaction).
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                self._idle.put(conn)
        finally:
            self._readers.release()

    def read(self, work: Callable[[apsw.Connection], T]) -> T:
        """Run `work` in one read transaction (a consistent snapshot)."""
        try:
            with self.reader() as conn:
                conn.execute("BEGIN")  # the snapshot, which the reader's release ends
                return work(conn)
        except apsw.Error as exc:
            raise convert(exc) from None

    def retire(self) -> None:
        """Stop serving a file found replaced, so that the file now at its path can be
        opened: the connections close without a checkpoint (they hold the replaced file's
        WAL and shared memory, which a new connection in this process would share)."""
        self.retired = True
        self.close()

    def retired_error(self) -> StoreDamaged:
        return damaged_error(self.path, self.containment.finding)

    def examine(self, work: Callable[[apsw.Connection, int], T]) -> T:
        """Like search, but the index is only caught up if it can be (a full disk cannot
        take its batch): `work` reads it as it is and can tell from its marks."""
        try:
            return self._search(work, best_effort=True)
        except apsw.Error as exc:
            raise convert(exc) from None

    def search(self, work: Callable[[apsw.Connection, int], T]) -> T:
        """Run `work(conn, touched_to)` in one read transaction with the search index
        attached as `idx` and covering everything the store held when the call began.
        Damage found in the index is healed (rebuilt) once when nobody else holds it."""
        try:
            return self._search(work)
        except apsw.Error as exc:
            if not self.indexer.heal(exc):
                raise convert(exc) from None
        try:
            return self._search(work)
        except apsw.Error as exc:
            raise convert(exc) from None

    def _search(self, work: Callable[[apsw.Connection, int], T], best_effort: bool = False) -> T:
        with self.reader() as conn:
            self._attach_index(conn)
            conn.execute("BEGIN")  # a snapshot: the reader's release ends it, unless it is ended below
            # The index's marks first: the store's snapshot, read next, is then as new or
            # newer, so anything the index lacks shows as the index being behind.
            indexed = conn.execute(INDEX_MARKS).fetchone()
            target = conn.execute(STORE_MARKS).fetchone()
            if indexed[0] >= target[0] and indexed[1] >= target[1]:
                return work(conn, indexed[1])
            conn.execute("COMMIT")  # the index is behind: read it again once caught up
            if self.full is not None:
                if best_effort:
                    return self._read_index(conn, work)
                # Read from its main file like the store, the index is behind (it is caught
                # up at every clean close): its next batch needs room.
                raise DiskFull(f"{self.full} The search index is behind the store and cannot be brought up "
                               "to date until space is freed.")
            try:
                self.indexer.catch_up(target)
            except apsw.Error:
                if not best_effort:
                    raise
            self._attach_index(conn)  # a rebuild may have made a new file meanwhile
            return self._read_index(conn, work)

    @staticmethod
    def _read_index(conn: apsw.Connection, work: Callable[[apsw.Connection, int], T]) -> T:
        conn.execute("BEGIN")  # the snapshot, which the reader's release ends
        return work(conn, conn.execute(INDEX_MARKS).fetchone()[1])

    def _attach_index(self, conn: apsw.Connection) -> None:
        generation = self.indexer.generation
        if self._attached.get(id(conn)) == generation:
            return
        if id(conn) in self._attached:
            conn.execute("DETACH idx")
        if self.full is None:
            self.indexer.marks()  # opens (creates) the index file first
        conn.execute("ATTACH ? AS idx", (index_schema.uri(index_schema.path_of(self.path), self._vfs,
                                                          immutable=self.full is not None),))
        # An attached file gets SQLite's default cache (2 MB), less than a common word's
        # doclists: searches would read them from the OS again every time.
        conn.execute(f"PRAGMA idx.cache_size=-{CACHE_KIB}")
        self._attached[id(conn)] = generation

    def close(self) -> None:
        if self.containment.finding is not None:
            self.indexer.close_without_checkpoint()
        elif self.full is None and not self.retired:
            self.indexer.settle()  # a clean close leaves the index caught up with the store
        self.indexer.stop()
        self.writer.stop()
        if self._wal_sync is not None:
            self._wal_sync.close()
        self.containment.close()
        with self._readers_lock:
            for conn in self._all_readers:
                if self.containment.finding is not None:
                    no_checkpoint_on_close(conn)
                if id(conn) in self._attached:
                    _detach_index(conn)
                conn.close()
            self._all_readers.clear()


def _detach_index(conn: apsw.Connection) -> None:
    """Detaching the last connection on the index file checkpoints it; if that fails
    (SQLite gives up on it quietly, APSW raises it), the index's WAL stays for the next
    open. The index never fails a store's close."""
    try:
        conn.execute("DETACH idx")
    except apsw.Error:
        pass


class FullDisk:
    """The writer of a file opened on a full disk: every write is refused as disk_full.
    The handle reads; once space is freed, a store opened after every handle on the file
    closed writes again."""

    def __init__(self, full: DiskFull) -> None:
        self._full = full

    def run(self, work: Callable[[apsw.Connection], T], *, in_transaction: bool = True) -> T:
        raise DiskFull(f"{self._full} The store was opened for reading only; close every handle on it once "
                       "space is freed, then open it again to write.")

    def stop(self) -> None:
        pass


def readable_from_the_main_file(path: Path) -> bool:
    """Whether the main file alone holds the whole store: no WAL or journal content (a
    clean close checkpointed everything) and no other process that could be writing."""
    for suffix in ("-wal", "-journal"):
        try:
            if os.stat(f"{path}{suffix}").st_size:
                return False
        except FileNotFoundError:
            continue
    return path.exists() and not holders(path)


_lock = threading.Lock()
_files: dict[tuple[int, int], SharedFile] = {}
_opening: dict[Path, threading.Lock] = {}
_forgotten_after_fork: list[SharedFile] = []


def acquire(path: Path, *, durability: str, patience: float, vfs: str | None = None,
            embedder: Embedder | None = None) -> SharedFile:
    """The SharedFile for `path`, opened on first use; each call takes one reference."""
    with _lock:
        path_lock = _opening.setdefault(path, threading.Lock())
    # Opening a new file can wait on other processes (migrations take the write lock):
    # serialise per path only, so a slow store does not hold up opening the others.
    with path_lock:
        _retire_replaced(path)
        refuse_if_damaged(path)
        with _lock:
            shared = _existing(path)
            if shared is not None:
                shared.use(embedder)
                shared.hold(durability)
                return shared
        shared = SharedFile(path, durability=durability, patience=patience, vfs=vfs, embedder=embedder)
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        with _lock:
            twin = _files.get(key)
            if twin is None:
                shared.key = key
                _files[key] = shared
        if twin is not None:  # the same file reached through another path
            shared.close()
            with _lock:
                twin.use(embedder)
                twin.hold(durability)
            return twin
        with _lock:
            shared.hold(durability)
        return shared


def _retire_replaced(path: Path) -> None:
    """Retire the files open at `path` that were found replaced (S-13, S-28): their handles
    stay refused while a new handle opens the generation now at the path. A replaced file
    whose handles were all closed already is forgotten too: nothing is left in this process
    that could write to it, and the open that follows examines the file now at the path
    (its foreign WAL is set aside, or the open is refused while another process holds it)."""
    with _lock:
        stale = [f for f in _files.values() if f.path == path and f.containment.finding is not None
                 and f.containment.finding.cause is Cause.REPLACED]
        for shared in stale:
            del _files[shared.key]
    for shared in stale:
        shared.retire()
    forget_replaced(path)


def release(shared: SharedFile, durability: str) -> None:
    """Drop one reference; the last one closes the file's writer and readers."""
    with _lock:
        remaining = shared.unhold(durability)
        if remaining == 0 and _files.get(shared.key) is shared:
            del _files[shared.key]
    if remaining == 0:
        shared.close()


def _existing(path: Path) -> SharedFile | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return _files.get((st.st_dev, st.st_ino))


def _forget_after_fork() -> None:
    global _lock
    _lock = threading.Lock()
    _opening.clear()
    _forgotten_after_fork.extend(_files.values())  # kept referenced: never closed here
    _files.clear()


os.register_at_fork(after_in_child=_forget_after_fork)
