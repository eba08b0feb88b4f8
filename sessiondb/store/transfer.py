"""Export and import for every backend: the streams, the in-memory guard, the accounting.

The records are the sessiondb export format (sessiondb.formats); a backend only reads and
writes rows in it. Export streams one session at a time, each from one snapshot, in
constant memory and never capped; `export_session` is the in-memory copy, refused over a
size guard (S-42). Import validates each session whole before handing it to the backend
(nothing of a bad session is written), counts what it did and relinks children whose
parent came later in the same import.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

from .. import formats
from ..errors import InvalidInput, NotFound, SessionDBError, SessionTooLarge
from ..model import ImportReport, MessageLimits
from . import arguments as arg
from .backend import Backend

EXPORT_LIMIT = 20_000  # messages an in-memory export may hold (S-42); 0 disables


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
            ids = list(dict.fromkeys(arg.session_id(s) for s in session_ids))
            missing = backend.missing_sessions(ids)
            if missing:
                raise NotFound(f"no session {missing[0]!r} in this store; nothing was exported")
        return self._export_stream(backend, ids)

    def _export_stream(self, backend: Backend, ids: list[str] | None) -> Iterator[dict[str, Any]]:
        yield formats.header(self._profile, _generator(), self._clock())
        for sid in backend.session_ids() if ids is None else ids:
            yield from backend.session_records(sid)

    def export_session(self, session_id: str, *, max_messages: int = EXPORT_LIMIT) -> dict[str, Any]:
        sid, limit = arg.session_id(session_id), arg.count(max_messages, "max_messages")
        backend = self._open()
        try:
            records = list(backend.session_records(sid, max_messages=limit))
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
        dry_run = arg.flag(dry_run, "dry_run")
        if isinstance(records, (str, bytes, Mapping)) or not hasattr(records, "__iter__"):
            raise InvalidInput("records must be an iterable of JSONL lines or of parsed records")
        backend = self._open()
        report = ImportReport()
        links: list[tuple[str, str]] = []
        imported: set[str] = set()
        try:
            for group in formats.read_groups(records, self._limits):
                outcome = backend.import_session(group, dry_run)
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
            report.detached = backend.relink(links)
        return report


def _generator() -> str:
    # Imported here: importlib.metadata (about 4 MB resident with what it loads) is needed
    # only to stamp an export, and every store would carry it otherwise.
    from importlib import metadata
    try:
        return f"sessiondb {metadata.version('sessiondb')}"
    except metadata.PackageNotFoundError:
        return "sessiondb"
