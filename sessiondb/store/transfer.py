"""Export and import for every backend: the streams, the in-memory guard, the accounting,
and the rows of the export format (sessiondb.formats) as units of work over `Rows`.

Export streams one session at a time, each from one snapshot (`Backend.stream`), its
messages read a page at a time, in constant memory and never capped; `export_session` is
the in-memory copy, refused over a size guard (S-42). Sessions come in creation order, so
a parent usually precedes its children.

Import validates each session whole (formats.read_groups, every record checked) before
writing it in one write transaction: a session already stored keeps its row, and only
the messages (by uid), usage rows (by model, provider, task) and turns (by id) it lacks
are added. Message ids are the importing store's; order, uids, seqs, states and
timestamps are kept, so running an interrupted import again completes it. The import
counts what it did and relinks children whose parent came later in the same import.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping, NoReturn

from .. import formats
from ..errors import InvalidInput, NotFound, SessionDBError, SessionTooLarge, TitleConflict
from ..inputs import check_flag, check_nonnegative, check_session_ref
from ..formats import SessionGroup
from ..model import ImportOutcome, ImportReport, MessageLimits
from . import lineage
from .backend import Backend
from .rows import INSERTED, Row, Rows, above, one_of

EXPORT_LIMIT = 20_000  # messages an in-memory export may hold (S-42); 0 disables
SESSION_PAGE = 500  # session ids read per snapshot while exporting everything
MESSAGE_PAGE = 200  # message rows an export holds at a time: a few hundred KB of text


class Transfer:
    """The export and import methods of CheckedStore."""

    _profile: str | None
    _limits: MessageLimits
    _clock: Callable[[], float]
    _open: Callable[[], Backend]  # CheckedStore's: the backend, or StoreClosed

    def export(self, session_ids: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        backend = self._open()
        ids = None
        if session_ids is not None:
            if isinstance(session_ids, str):
                raise InvalidInput("session_ids must be a list of session ids, not one string")
            ids = list(dict.fromkeys(check_session_ref(s) for s in session_ids))
            missing = backend.read(partial(missing_sessions, session_ids=ids))
            if missing:
                raise NotFound(f"no session {missing[0]!r} in this store; nothing was exported")
        return self._export_stream(backend, ids)

    def _export_stream(self, backend: Backend, ids: list[str] | None) -> Iterator[dict[str, Any]]:
        yield formats.header(self._profile, _generator(), self._clock())
        for sid in session_ids(backend) if ids is None else ids:
            yield from backend.stream(partial(session_records, session_id=sid))

    def export_session(self, session_id: str, *, max_messages: int = EXPORT_LIMIT) -> dict[str, Any]:
        sid, limit = check_session_ref(session_id), check_nonnegative(max_messages, "max_messages")
        backend = self._open()
        try:
            records = list(backend.stream(partial(session_records, session_id=sid, max_messages=limit)))
        except SessionTooLarge as exc:
            raise self._stream_instead(exc, "in-memory export", sid) from None
        if not records:
            raise NotFound(f"no session {sid!r} in this store")
        return {
            **formats.header(self._profile, _generator(), self._clock()),
            "session": records[0]["session"],
            "messages": [r["message"] for r in records if r["type"] == "message"],
            "usage": [r["usage"] for r in records if r["type"] == "usage"],
            "turns": [r["turn"] for r in records if r["type"] == "turn"],
        }

    def _stream_instead(self, exc: SessionTooLarge, what: str, session_id: str) -> SessionTooLarge:
        """The backend's refusal, with the guard that refused and the streaming alternative (S-42)."""
        profile = f" -p {self._profile}" if self._profile else ""
        sid = exc.session_id or session_id
        return SessionTooLarge(
            f"{exc}, over the {what} limit of {exc.limit:,}; stream it instead with "
            f"`sessiondb{profile} sessions export --session {sid} -o FILE` (never capped), "
            "or raise the limit (max_messages=0 disables it)",
            limit=exc.limit, count=exc.count, session_id=sid,
        )

    def import_records(self, records: Iterable[Any], *, dry_run: bool = False) -> ImportReport:
        dry_run = check_flag(dry_run, "dry_run")
        if isinstance(records, (str, bytes, Mapping)) or not hasattr(records, "__iter__"):
            raise InvalidInput("records must be an iterable of JSONL lines or of parsed records")
        backend = self._open()
        report = ImportReport()
        links: list[tuple[str, str]] = []
        imported: set[str] = set()
        try:
            for group in formats.read_groups(records, self._limits):
                outcome = import_session(backend, group, dry_run)
                imported.add(group.id)
                report.sessions_created += outcome.created
                report.sessions_merged += not outcome.created
                report.messages_imported += outcome.messages_imported
                report.messages_skipped += outcome.messages_skipped
                report.usage_rows_imported += outcome.usage_imported
                report.usage_rows_skipped += outcome.usage_skipped
                report.turns_imported += outcome.turns_imported
                report.turns_skipped += outcome.turns_skipped
                if outcome.detached_from is not None:
                    links.append((group.id, outcome.detached_from))
        except SessionDBError as exc:
            exc.args = (formats.annotate(exc, 0 if dry_run else len(imported)),)
            raise
        if dry_run:
            report.detached = [child for child, parent in links if parent not in imported]
        elif links:
            report.detached = backend.write(partial(relink, links=links))
        return report


# --- export -------------------------------------------------------------------------------


def missing_sessions(rows: Rows, session_ids: list[str]) -> list[str]:
    found: set[str] = set()
    for i in range(0, len(session_ids), lineage.CHUNK):
        chunk = session_ids[i:i + lineage.CHUNK]
        found.update(r["id"] for r in rows.select("sessions", {"id": one_of(chunk)}, columns=("id",)))
    return [sid for sid in session_ids if sid not in found]


def session_page(rows: Rows, after: int) -> list[Row]:
    """(INSERTED, id) of the next sessions after `after`, in creation order."""
    return rows.select("sessions", {INSERTED: above(after)}, columns=(INSERTED, "id"), order=(INSERTED,),
                       limit=SESSION_PAGE)


def session_ids(backend: Backend) -> Iterator[str]:
    """Every session id in creation order, a page per snapshot."""
    after = 0
    while page := backend.read(partial(session_page, after=after)):
        for row in page:
            yield row["id"]
        after = page[-1][INSERTED]


def _records(rows: Rows, table: str, where: Mapping[str, Any], order: tuple[str, ...],
             limit: int | None = None) -> list[dict[str, Any]]:
    columns = tuple(formats.COLUMNS[table])
    return [formats.encode(table, row.values()) for row in
            rows.select(table, where, columns=columns, order=order, limit=limit)]


def session_records(rows: Rows, session_id: str, max_messages: int = 0) -> Iterator[dict[str, Any]]:
    """One session's export records (session, messages, usage, turns, end), nothing if it is
    gone; over `max_messages` (0: no limit) raises SessionTooLarge. Run by Backend.stream:
    one snapshot throughout, the messages held a page at a time."""
    found = _records(rows, "sessions", {"id": session_id}, ())
    if not found:
        return
    if max_messages:
        total = rows.count("messages", {"session_id": session_id})[None]["count"]
        if total > max_messages:
            raise SessionTooLarge(f"session {session_id} holds {total:,} messages", limit=max_messages, count=total)
    yield {"type": "session", "session": found[0]}
    count, after = 0, 0
    while page := _records(rows, "messages", {"session_id": session_id, "id": above(after)}, ("id",), MESSAGE_PAGE):
        for record in page:
            yield {"type": "message", "message": record}
        count += len(page)
        after = page[-1]["id"]
    usage = _records(rows, "usage", {"session_id": session_id}, ("model", "provider", "task"))
    for record in usage:
        yield {"type": "usage", "usage": record}
    turns = _records(rows, "turns", {"session_id": session_id}, (INSERTED,))
    for record in turns:
        yield {"type": "turn", "turn": record}
    yield formats.end_record(session_id, count, len(usage), len(turns))


# --- import -------------------------------------------------------------------------------


class _DryRun(Exception):
    """Raised inside an import's write to take it back once counted."""

    def __init__(self, outcome: ImportOutcome) -> None:
        self.outcome = outcome


def import_session(backend: Backend, group: SessionGroup, dry_run: bool) -> ImportOutcome:
    """Store one validated session in one write; a dry run counts the same and keeps nothing."""
    if dry_run:
        try:
            backend.write(partial(_dry_run, group=group))
        except _DryRun as done:
            return done.outcome
    return backend.write(partial(write_group, group=group))


def _dry_run(rows: Rows, group: SessionGroup) -> NoReturn:
    raise _DryRun(write_group(rows, group))


def write_group(rows: Rows, group: SessionGroup) -> ImportOutcome:
    session = dict(group.session)
    sid = session["id"]
    # Locked: a concurrent import of the same session waits, then merges into this one's row.
    created = not rows.select("sessions", {"id": sid}, columns=("id",), lock=True)
    detached_from = None
    if created:
        parent = session.get("parent_session_id")
        if parent is not None and not rows.select("sessions", {"id": parent}, columns=("id",)):
            session["parent_session_id"], detached_from = None, parent
        if session.get("title") is not None:
            holder = rows.select("sessions", {"title": session["title"]}, columns=("id",))
            if holder:
                raise TitleConflict(
                    f"line {group.line}: session {sid}'s title {session['title']!r} is already used by session "
                    f"{holder[0]['id']} in this store; rename one of them (`sessiondb sessions set-title`) "
                    "and import again")
        rows.insert("sessions", [session])
    imported = _insert_new(rows, "messages", group.messages)
    usage_imported = _insert_new(rows, "usage", group.usage)
    # A turn id is unique in the store: one already stored (here or elsewhere) is skipped.
    turns_imported = _insert_new(rows, "turns", group.turns)
    if not created and imported:
        # The stored row keeps its own fields; its counters take in what was added.
        lineage.recount(rows, sid)
        rows.update("sessions", {"id": sid}, greatest={
            "last_activity_at": group.session.get("last_activity_at") or group.session.get("started_at")})
    return ImportOutcome(created, imported, len(group.messages) - imported, usage_imported,
                         len(group.usage) - usage_imported, detached_from, turns_imported,
                         len(group.turns) - turns_imported)


def _insert_new(rows: Rows, table: str, new: list[dict[str, Any]]) -> int:
    """Insert the rows not stored yet (under their key or unique columns), a bounded number
    per statement; how many were new."""
    inserted = 0
    for i in range(0, len(new), lineage.CHUNK):
        inserted += sum(1 for got in rows.insert(table, new[i:i + lineage.CHUNK], skip_taken=True) if got is not None)
    return inserted


def relink(rows: Rows, links: list[tuple[str, str]]) -> list[str]:
    """Restore parent links whose parent arrived later in the import; the ids still detached."""
    detached = []
    for child, parent in links:
        if rows.select("sessions", {"id": parent}, columns=("id",)):
            rows.update("sessions", {"id": child, "parent_session_id": None}, set={"parent_session_id": parent})
        else:
            detached.append(child)
    return detached


def _generator() -> str:
    # Imported here: importlib.metadata (about 4 MB resident with what it loads) is needed
    # only to stamp an export, and every store would carry it otherwise.
    from importlib import metadata
    try:
        return f"sessiondb {metadata.version('sessiondb')}"
    except metadata.PackageNotFoundError:
        return "sessiondb"
