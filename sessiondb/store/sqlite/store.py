"""SQLiteStore: the Store contract on an embedded SQLite file.

Input is validated here, on the caller's thread, before anything reaches the writer;
writes then run as units of work on the file's one writer (group commit), reads on a
pooled read connection. See store/contract.py for what each method promises.
"""

from __future__ import annotations

import os
import threading
import time
from functools import partial
from pathlib import Path
from importlib import metadata
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

import apsw

from ... import home as homes
from ...errors import DAMAGE_CAUSES, InvalidInput, StorageError, StoreClosed, StoreDamaged
from ...model import (
    MaintenanceReport, Message, Page, Session, SpoolReport, Usage, check_label, check_metadata, check_timestamp, clean_title,
    MessageLimits, check_count, check_session_id, new_session_id, prepare_messages,
)
from ..contract import MessageInput
from ...safety import spool
from . import maintenance
from . import messages as message_rows, registry, sessions, usage
from . import compaction, leases, lineage as lineage_rows
from ...model import Lease
from .connect import DEFAULT_PATIENCE, check_durability, check_sqlite_version
from ... import query as search_query
from ...errors import NotFound, SessionDBError, SessionTooLarge
from ...model import MAX_TITLE_LENGTH, ImportReport, Role, SearchHit, StoreStats, check_unicode
from . import catalog, search as search_index, transfer
from .errors import convert
from . import routing as routing_rows

T = TypeVar("T")
MAX_PAGE = 1000
EXPORT_LIMIT = 20_000  # messages an in-memory export may hold (S-42); 0 disables
MAX_TTL = 7 * 24 * 3600.0  # a compaction lease lasts at most a week between refreshes


class SQLiteStore:
    """A handle on one SQLite store file; many handles share the file's one writer."""

    def __init__(
        self,
        path: Path,
        *,
        profile: str | None = None,
        durability: str = "full",
        patience: float = DEFAULT_PATIENCE,
        vfs: str | None = None,
        limits: MessageLimits = MessageLimits(),
    ) -> None:
        check_sqlite_version(apsw.sqlite_lib_version())
        self._limits = limits
        self._durability = check_durability(durability)
        if not (isinstance(patience, (int, float)) and patience >= 0):
            raise InvalidInput("patience must be a non-negative number of seconds")
        self._path = path
        self._profile = profile
        self._closed = threading.Event()
        self._file = registry.acquire(path, durability=durability, patience=float(patience), vfs=vfs)
        if spool.pending(path):
            # A healthy open replays what an earlier refusal kept; what still fails stays spooled.
            self.replay_spool()

    # --- the handle --------------------------------------------------------------------

    @property
    def profile(self) -> str | None:
        return self._profile

    @property
    def location(self) -> str:
        return str(self._path)

    @property
    def path(self) -> Path:
        return self._path

    @property
    def journal_mode(self) -> str:
        return self._file.journal_mode

    @property
    def routing(self) -> "routing_rows.RoutingTable":
        """The gateway's routing index and key/peer lookups on this store (SQLite only)."""
        return routing_rows.RoutingTable(self._write, self._read, self._profile)

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        registry.release(self._file, self._durability)

    def __enter__(self) -> "SQLiteStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self._path)!r}, profile={self._profile!r})"

    def _write(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        return self._file.writer.run(work)

    def _read(self, work: Callable[[apsw.Connection], T]) -> T:
        self._check_open()
        return self._file.read(work)

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")

    # --- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        source: str,
        *,
        session_id: str | None = None,
        title: str | None = None,
        profile: str | None = None,
        session_key: str | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_relation: str | None = None,
    ) -> Session:
        now = time.time()
        if parent_relation is not None and parent_session_id is None:
            raise InvalidInput("parent_relation needs a parent_session_id")
        values = {
            "id": new_session_id(now) if session_id is None else check_session_id(session_id),
            "source": check_label(source, "source", required=True),
            "profile": homes.validate_profile(profile) if profile is not None else self._profile,
            "session_key": check_label(session_key, "session_key"),
            "user_id": check_label(user_id, "user_id"),
            "chat_id": check_label(chat_id, "chat_id"),
            "chat_type": check_label(chat_type, "chat_type"),
            "thread_id": check_label(thread_id, "thread_id"),
            "title": clean_title(title),
            "model": check_label(model, "model"),
            "parent_session_id": check_label(parent_session_id, "parent_session_id"),
            "parent_relation": check_label(parent_relation, "parent_relation"),
            "started_at": now,
            "metadata": check_metadata(metadata),
        }
        return self._write(partial(sessions.create, values=values))

    def get_session(self, session_id: str) -> Session:
        return self._read(partial(sessions.get, session_id=_sid(session_id)))

    def list_sessions(
        self,
        *,
        source: str | None = None,
        include_archived: bool = False,
        include_hidden: bool = False,
        pinned: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        return self._read(
            partial(
                sessions.list_page,
                source=check_label(source, "source"),
                include_archived=_flag(include_archived, "include_archived"),
                include_hidden=_flag(include_hidden, "include_hidden"),
                pinned=None if pinned is None else _flag(pinned, "pinned"),
                since=check_timestamp(since, "since"),
                until=check_timestamp(until, "until"),
                limit=_limit(limit),
                cursor=None if cursor is None else check_label(cursor, "cursor"),
            )
        )

    def end_session(self, session_id: str, reason: str) -> Session:
        reason = check_label(reason, "reason", required=True)
        return self._write(partial(sessions.end, session_id=_sid(session_id), reason=reason, now=time.time()))

    def reopen_session(self, session_id: str) -> Session:
        return self._write(partial(sessions.reopen, session_id=_sid(session_id)))

    def set_title(self, session_id: str, title: str | None) -> Session:
        return self._write(partial(sessions.set_title, session_id=_sid(session_id), title=clean_title(title)))

    def set_flags(
        self,
        session_id: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
        hidden: bool | None = None,
    ) -> Session:
        given = {"pinned": pinned, "archived": archived, "hidden": hidden}
        flags = {name: _flag(value, name) for name, value in given.items() if value is not None}
        return self._write(partial(sessions.set_flags, session_id=_sid(session_id), flags=flags))

    def update_metadata(self, session_id: str, patch: Mapping[str, Any]) -> Session:
        if not isinstance(patch, Mapping):  # check_metadata takes None as "no metadata"
            raise InvalidInput(f"the metadata patch must be a mapping, not {type(patch).__name__}")
        check_metadata(patch)
        return self._write(partial(sessions.update_metadata, session_id=_sid(session_id), patch=dict(patch)))

    def delete_session(self, session_id: str) -> None:
        self._write(partial(sessions.delete, session_id=_sid(session_id)))

    # --- messages ----------------------------------------------------------------------

    def append(self, session_id: str, messages: MessageInput | Iterable[MessageInput]) -> list[Message]:
        batch = prepare_messages(messages, self._limits)
        session_id = _sid(session_id)
        try:
            return self._write(partial(lineage_rows.append, session_id=session_id, batch=batch, now=time.time()))
        except StorageError as exc:
            if exc.cause not in DAMAGE_CAUSES:
                raise
            # The file cannot take writes; the messages are kept, never dropped (S-13..S-15).
            kept = spool.write(self._path, session_id, batch, exc.cause.value)
            raise StoreDamaged.spooled(exc, str(kept)) from exc

    # --- maintenance ---------------------------------------------------------------------

    def backup(self, destination: str | Path) -> int:
        """Write a consistent copy of the store to a new file while writers run; returns its size."""
        given = os.path.expanduser(os.fspath(destination))
        if os.path.lexists(given):  # a symlink too: a backup never goes where a planted link points
            raise InvalidInput(f"{given} already exists; choose a new file for the backup")
        target = Path(os.path.realpath(given))
        if target == self._path:
            raise InvalidInput("the backup must go to a new file, not the store itself")
        self._check_open()
        with self._file.reader() as conn:
            return maintenance.backup(conn, target)

    def optimize(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        """Merge the search index, refresh statistics, checkpoint. Refused while others hold the store."""
        return self._maintain("optimize", maintenance.optimize, force=force, dry_run=dry_run)

    def vacuum(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        """Rewrite the file compactly. Refused while other processes hold the store."""
        return self._maintain("vacuum", maintenance.vacuum, force=force, dry_run=dry_run)

    def prune(
        self,
        *,
        older_than: float | None = None,
        never_active: bool = False,
        include_pinned: bool = False,
        include_archived: bool = False,
        force: bool = False,
        dry_run: bool = False,
    ) -> MaintenanceReport:
        """Delete sessions inactive for `older_than` seconds, and/or never-active ones (S-40).

        Pinned and archived sessions are kept unless included; the never-active rule
        never takes them. Refused while other processes hold the store, unless forced.
        A dry run lists what would go and is never refused.
        """
        queries = []
        if older_than is not None:
            age = check_timestamp(older_than, "older_than")
            if age is None or age < 0:
                raise InvalidInput("older_than must be a non-negative number of seconds")
            queries.append(maintenance.older_than_sql(
                time.time() - age, include_pinned=_flag(include_pinned, "include_pinned"),
                include_archived=_flag(include_archived, "include_archived")))
        if _flag(never_active, "never_active"):
            queries.append(maintenance.never_active_sql(time.time()))
        if not queries:
            raise InvalidInput("say what to prune: older_than, never_active, or both")
        pick = maintenance.select_ids if dry_run else maintenance.delete_sessions
        work = partial(maintenance.sessions_matching, queries=queries, pick=pick)
        return self._maintain("prune", work, force=force, dry_run=dry_run, rewrites=False)

    def _maintain(self, action: str, work: Callable[[apsw.Connection], Any], *, force: bool, dry_run: bool,
                  rewrites: bool = True) -> MaintenanceReport:
        """Run `work` unless another process holds the store (S-19). A rewrite (optimize,
        vacuum) runs outside a transaction; a dry run previews without writing."""
        self._check_open()
        before = maintenance.store_bytes(self._path)
        if _flag(dry_run, "dry_run"):
            warnings, result = [], None if rewrites else self._read(work)
        else:
            warnings = maintenance.check_unheld(self._path, action, force=_flag(force, "force"))
            result = self._file.writer.run(work, in_transaction=not rewrites)
        return MaintenanceReport(action, dry_run, before, maintenance.store_bytes(self._path),
                                 sessions=result or [], warnings=warnings)

    def replay_spool(self) -> SpoolReport:
        """Append every spooled batch of this store, oldest first (see safety/spool.py)."""
        report = SpoolReport()
        for path, error in spool.replay(self._path, self.append):
            if error is None:
                report.replayed.append(str(path))
            else:
                report.kept.append((str(path), str(error)))
        return report

    def transcript(
        self,
        session_id: str,
        *,
        include_compacted: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        order: str = "asc",
    ) -> list[Message]:
        return self._read(
            partial(
                message_rows.transcript,
                session_id=_sid(session_id),
                include_compacted=_flag(include_compacted, "include_compacted"),
                limit=None if limit is None else _count(limit, "limit"),
                before=None if before is None else _count(before, "before"),
                after=None if after is None else _count(after, "after"),
                order=order,
            )
        )

    # --- compaction and lineage ----------------------------------------------------------

    def begin_compaction(self, session_id: str, *, holder: str | None = None, ttl: float = 300) -> Lease:
        return self._write(partial(
            compaction.begin, session_id=_sid(session_id), holder=check_label(holder, "holder"), ttl=_ttl(ttl),
        ))

    def refresh_compaction(self, lease: Lease, ttl: float | None = None) -> Lease:
        return self._write(partial(leases.refresh, lease=_lease(lease), ttl=None if ttl is None else _ttl(ttl)))

    def abort_compaction(self, lease: Lease) -> None:
        self._write(partial(leases.release, lease=_lease(lease)))

    def commit_compaction(
        self, lease: Lease, summary_messages: MessageInput | Iterable[MessageInput], *, mode: str = "in_place",
    ) -> Session:
        lease = _lease(lease)
        if mode not in compaction.MODES:
            raise InvalidInput(f"mode must be 'in_place' or 'rotate', not {mode!r}")
        batch = prepare_messages(summary_messages, self._limits)
        return self._write(partial(compaction.commit, lease=lease, batch=batch, mode=mode, now=time.time()))

    def compaction_lease(self, session_id: str) -> Lease | None:
        return self._read(partial(leases.current, session_id=_sid(session_id)))

    def lineage(self, session_id: str) -> list[Session]:
        return self._read(partial(lineage_rows.lineage, session_id=_sid(session_id)))

    def tip(self, session_id: str) -> Session:
        return self._read(partial(lineage_rows.tip, session_id=_sid(session_id)))

    def resume(self, session_id: str, *, max_messages: int = lineage_rows.RESUME_LIMIT) -> list[dict[str, Any]]:
        return self._read(partial(lineage_rows.resume, session_id=_sid(session_id),
                                  max_messages=_count(max_messages, "max_messages"), profile=self._profile))

    def rewind(self, session_id: str, to_message_id: int) -> int:
        return self._write(partial(lineage_rows.rewind, session_id=_sid(session_id),
                                   to_message_id=_count(to_message_id, "to_message_id")))

    def restore_rewound(self, session_id: str) -> int:
        return self._write(partial(lineage_rows.restore_rewound, session_id=_sid(session_id)))

    def branch(self, session_id: str, at_message_id: int, *, title: str | None = None) -> Session:
        now = time.time()
        values = {"id": new_session_id(now), "title": clean_title(title), "started_at": now}
        return self._write(partial(lineage_rows.branch, session_id=_sid(session_id),
                                   at_message_id=_count(at_message_id, "at_message_id"), values=values))

    # --- usage -------------------------------------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        model: str,
        provider: str = "",
        task: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
    ) -> None:
        key = (
            check_label(model, "model", required=True),
            check_label(provider, "provider") or "",
            check_label(task, "task") or "",
        )
        amounts: dict[str, float] = {
            "input_tokens": check_count(input_tokens, "input_tokens"),
            "output_tokens": check_count(output_tokens, "output_tokens"),
            "cache_read_tokens": check_count(cache_read_tokens, "cache_read_tokens"),
            "cache_write_tokens": check_count(cache_write_tokens, "cache_write_tokens"),
            "reasoning_tokens": check_count(reasoning_tokens, "reasoning_tokens"),
            "cost_usd": _cost(cost_usd),
        }
        self._write(partial(usage.record, session_id=_sid(session_id), key=key, amounts=amounts))

    def usage(self, session_id: str) -> Usage:
        return self._read(partial(usage.total, session_id=_sid(session_id)))

    # --- search, lookup, export and import (search.py, catalog.py, transfer.py) ---------

    def search(
        self,
        query: str,
        *,
        profile: str | None = None,
        source: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        include_tools: bool = False,
        limit: int = 20,
        substring: bool = False,
    ) -> list[SearchHit]:
        if not isinstance(query, str):
            raise InvalidInput(f"the search query must be text, not {type(query).__name__}")
        check_unicode(query, "the search query")
        if role is not None and (not isinstance(role, str) or role not in {r.value for r in Role}):
            raise InvalidInput(f"role must be one of system, user, assistant, tool (got {role!r})")
        return self._read(
            partial(
                search_index.search,
                query=search_query.parse(query, substring=_flag(substring, "substring")),
                profile=None if profile is None else homes.validate_profile(profile),
                source=check_label(source, "source"),
                session_id=None if session_id is None else _sid(session_id),
                role=role,
                since=check_timestamp(since, "since"),
                until=check_timestamp(until, "until"),
                include_tools=_flag(include_tools, "include_tools"),
                limit=_limit(limit),
            )
        )

    def find_session(self, ref: str) -> Session:
        ref = check_label(ref, "session reference", required=True).strip()
        title = clean_title(ref) if len(ref) <= MAX_TITLE_LENGTH else None
        return self._read(partial(catalog.find, ref=ref, title=title))

    def stats(self) -> StoreStats:
        counts = self._read(catalog.counts)
        size, wal = _file_size(self._path), _file_size(Path(f"{self._path}-wal"))
        return StoreStats(location=str(self._path), **counts, size_bytes=size + wal, wal_bytes=wal)

    def export(self, session_ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        if session_ids is None:
            ids = None
        else:
            if isinstance(session_ids, str):
                raise InvalidInput("session_ids must be a list of session ids, not one string")
            ids = list(dict.fromkeys(_sid(s) for s in session_ids))
            missing = self._read(partial(transfer.missing_sessions, session_ids=ids))
            if missing:
                raise NotFound(f"no session {missing[0]!r} in this store; nothing was exported")
        tables = self._read(transfer.schema)
        return self._export_stream(ids, tables)

    def _export_stream(self, ids: list[str] | None, tables: transfer.Schema) -> Iterator[dict[str, Any]]:
        yield transfer.header(self._profile, _generator(), time.time())
        if ids is not None:
            for sid in ids:
                yield from self._export_session_stream(sid, tables)
            return
        after = 0
        while page := self._read(partial(transfer.session_page, after=after)):
            for _rowid, sid in page:
                yield from self._export_session_stream(sid, tables)
            after = page[-1][0]

    def _export_session_stream(self, session_id: str, tables: transfer.Schema) -> Iterator[dict[str, Any]]:
        # One read transaction per session: its row, messages and usage agree.
        self._check_open()
        try:
            with self._file.reader() as conn:
                conn.execute("BEGIN")
                yield from transfer.session_records(conn, tables, session_id)
        except apsw.Error as exc:
            raise convert(exc) from None

    def export_session(self, session_id: str, *, max_messages: int = EXPORT_LIMIT) -> dict[str, Any]:
        sid, limit = _sid(session_id), _count(max_messages, "max_messages")
        profile = f" -p {self._profile}" if self._profile else ""

        def work(conn: apsw.Connection) -> dict[str, Any]:
            sessions.require(conn, sid)
            total = transfer.message_total(conn, sid)
            if limit and total > limit:
                raise SessionTooLarge(
                    f"session {sid} holds {total:,} messages, over the in-memory export limit of {limit:,}; "
                    f"stream it instead with `sessiondb{profile} sessions export --session {sid} -o FILE` "
                    "(never capped), or raise the limit (max_messages=0 disables it)",
                    limit=limit, count=total,
                )
            records = list(transfer.session_records(conn, transfer.schema(conn), sid))
            return {
                **transfer.header(self._profile, _generator(), time.time()),
                "session": records[0]["session"],
                "messages": [r["message"] for r in records if r["type"] == "message"],
                "usage": [r["usage"] for r in records if r["type"] == "usage"],
            }

        return self._read(work)

    def import_records(self, records: Iterable[Any], *, dry_run: bool = False) -> ImportReport:
        dry_run = _flag(dry_run, "dry_run")
        if isinstance(records, (str, bytes, Mapping)) or not hasattr(records, "__iter__"):
            raise InvalidInput("records must be an iterable of JSONL lines or of parsed records")
        tables = self._read(transfer.schema)
        report = ImportReport()
        links: list[tuple[str, str]] = []
        imported: set[str] = set()
        try:
            for group in transfer.read_groups(records, tables, self._limits):
                outcome = self._write(partial(transfer.write_group, group=group, dry_run=dry_run))
                imported.add(group.id)
                report.sessions_created += outcome.created
                report.sessions_merged += not outcome.created
                report.messages_imported += outcome.messages_imported
                report.messages_skipped += outcome.messages_skipped
                report.usage_rows_imported += outcome.usage_imported
                report.usage_rows_skipped += outcome.usage_skipped
                if outcome.detached_from is not None:
                    links.append((group.id, outcome.detached_from))
        except SessionDBError as exc:
            exc.args = (transfer.annotate(exc, 0 if dry_run else len(imported)),)
            raise
        if dry_run:
            report.detached = [child for child, parent in links if parent not in imported]
        elif links:
            report.detached = self._write(partial(transfer.relink, links=links))
        return report


# --- argument checks shared by the methods above ---------------------------------------


def _file_size(path: Path) -> int:
    try:
        return os.stat(path).st_size  # a stat by path: no descriptor on the live file
    except FileNotFoundError:
        return 0


def _generator() -> str:
    try:
        return f"sessiondb {metadata.version('sessiondb')}"
    except metadata.PackageNotFoundError:
        return "sessiondb"



def _sid(session_id: Any) -> str:
    return check_label(session_id, "session_id", required=True)


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, not {value!r}")
    return value


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be a non-negative integer, not {value!r}")
    return value


def _limit(value: Any) -> int:
    value = _count(value, "limit")
    if not 1 <= value <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
    return value


def _cost(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InvalidInput(f"cost_usd must be a non-negative number, not {value!r}")
    return float(value)


def _ttl(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TTL:
        raise InvalidInput(f"ttl must be a number of seconds above 0 and at most {MAX_TTL:.0f}, not {value!r}")
    return float(value)


def _lease(value: Any) -> Lease:
    if not isinstance(value, Lease):
        raise InvalidInput(f"expected the Lease that begin_compaction returned, not {type(value).__name__}")
    return value
