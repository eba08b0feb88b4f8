"""Writing an importer's events through the public Store contract, counting what happened.

Messages are appended in batches per session; append is idempotent by uid, so a message
already stored is returned as it is and counted as skipped. A message is new when the
store gave it an id above the session's last one; only a new message's usage is
recorded, so importing twice never counts a model call twice. Running totals (a tool
that keeps per-session counters) are recorded by their growth since the last import,
remembered in the session's metadata. A batch the store refuses for one message (its
source changed since it was stored, or it is not valid input) is written one message at
a time, so that message is reported and the others are kept (half a character, an
unpaired surrogate, is not refused: the store keeps it exactly). Session
metadata the store refuses as too large is written without its largest values, each
reported, so the session and its messages are still imported. Whatever else the store refuses as not
valid input (a usage with an impossible count, a title too long) is reported with where
it came from, and the import goes on.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..errors import InvalidInput, MessageConflict, MetadataTooLarge, NotFound, TitleConflict
from ..store.contract import Store
from .core import Conversation, Entry, Event, ImportReport, Malformed, Mark, Totals

BATCH = 500
#: The text messages waiting to be appended may hold, all sessions together, before they are
#: written: what an import holds stays bounded however large each message is.
BATCH_BYTES = 64 * 1024 * 1024
USAGE_THREADS = 8
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
#: Session metadata key holding the running totals already recorded (see Totals).
RECORDED = "imported_usage"


class Writer:
    def __init__(self, store: Store, report: ImportReport, progress: Callable[[ImportReport], None] | None = None):
        self.store, self.report, self.progress = store, report, progress
        self.seen: dict[str, Conversation] = {}  # the last version of each conversation written
        self.last_id: dict[str, int] = {}  # the session's highest message id, once looked up
        self.metadata: dict[str, dict[str, Any]] = {}
        self.titles: dict[str, str | None] = {}  # each session's title as stored
        self.pending: dict[str, list[Entry]] = {}
        self.pending_bytes: dict[str, int] = {}  # per session, of the text in `pending`
        self.held = 0  # the sum of pending_bytes

    def handle(self, event: Event) -> None:
        try:
            self._handle(event)
        except InvalidInput as exc:  # one record the store refuses never stops the import
            self._refused(event, str(exc))

    def _handle(self, event: Event) -> None:
        if isinstance(event, Entry):
            self._conversation(event.conversation, event.where, event.message.get("timestamp"))
            session_id, size = event.conversation.id, _text_size(event.message)
            batch = self.pending.setdefault(session_id, [])
            batch.append(event)
            self.pending_bytes[session_id] = self.pending_bytes.get(session_id, 0) + size
            self.held += size
            if len(batch) >= BATCH:
                self._flush(session_id)
            elif self.held >= BATCH_BYTES:
                self.finish()
        elif isinstance(event, Conversation):
            self._conversation(event)
        elif isinstance(event, Totals):
            self._conversation(event.conversation)
            self._flush(event.conversation.id)
            self._totals(event)
        elif isinstance(event, Malformed):
            self.report.malformed.append({"file": event.file, "line": event.line, "reason": event.reason})
        elif isinstance(event, Mark):
            self.finish()
            event.apply()  # only now: everything before the mark is stored
            self.report.files_read += 1
            if self.progress:
                self.progress(self.report)

    def _refused(self, event: Event, reason: str, where: tuple[str, int | None] | None = None) -> None:
        """Report what the store refused where it came from (its session, when the source names no place)."""
        conv = event if isinstance(event, Conversation) else getattr(event, "conversation", None)
        file, line = where or getattr(event, "where", None) or (f"session {conv.id}" if conv else "the source", None)
        self.report.malformed.append({"file": file, "line": line, "reason": reason})

    def finish(self) -> None:
        for session_id in list(self.pending):
            self._flush(session_id)

    # --- sessions ---------------------------------------------------------------------

    def _conversation(self, conv: Conversation, where: tuple[str, int | None] | None = None,
                      first: float | None = None) -> None:
        """Create or update the session of `conv`; `first` is the time of the message that
        brought it, which a session created for it starts at when the source gives no start."""
        before = self.seen.get(conv.id)
        if before == conv:
            return
        if before is None:
            self.report.saw(conv.id)
            try:
                session = self.store.get_session(conv.id)
            except NotFound:
                session = self._create(conv, where, first)
            self.metadata[conv.id] = dict(session.metadata)
            self.titles[conv.id] = session.title
        stored_title = self.titles[conv.id]
        given = self.metadata[conv.id].get("title")  # the title the source gave before, if it keeps one there
        changed = {k: v for k, v in conv.metadata.items() if v is not None and self.metadata[conv.id].get(k) != v}
        if changed:
            session = self._fitting(conv, where, changed, lambda fits: self.store.update_metadata(conv.id, fits))
            self.metadata[conv.id] = dict(session.metadata)
        # A title the source changed (a person renamed the session there) replaces the one
        # it gave before, never a title set in sessiondb.
        if conv.title and conv.title != stored_title and (not stored_title or stored_title == given):
            try:
                self.titles[conv.id] = self.store.set_title(conv.id, conv.title).title
            except TitleConflict:
                pass  # titles are unique in a store; the source's title stays in the metadata
            except InvalidInput as exc:  # too long for a title: the session is imported without one
                self._refused(conv, f"the session's title was left out: {exc}", where)
        self.seen[conv.id] = conv

    def _create(self, conv: Conversation, where: tuple[str, int | None] | None, first: float | None):
        parent = conv.parent_id
        if parent is not None:
            try:
                self.store.get_session(parent)
            except NotFound:
                parent = None  # its parent was not imported (yet): the link stays in the metadata
        session = self._fitting(
            conv, where, {k: v for k, v in conv.metadata.items() if v is not None},
            lambda fits: self.store.create_session(
                conv.source, session_id=conv.id, model=conv.model, metadata=fits,
                parent_session_id=parent, parent_relation=conv.parent_relation if parent else None,
                started_at=first if conv.started_at is None else conv.started_at))
        self.report.sessions_created += 1
        self.last_id[conv.id] = 0
        return session

    def _fitting(self, conv: Conversation, where: tuple[str, int | None] | None, metadata: dict[str, Any],
                 write: Callable[[dict[str, Any]], Any]) -> Any:
        """write(metadata), leaving out its largest value for as long as the store refuses
        it (MessageLimits bounds each value and the whole), each value left out reported."""
        metadata = dict(metadata)
        while True:
            try:
                return write(metadata)
            except MetadataTooLarge as exc:
                if not metadata:
                    raise
                largest = max(metadata, key=lambda key: len(json.dumps(metadata[key], default=str)))
                del metadata[largest]
                self._refused(conv, f"the session's metadata {largest!r} was left out: {exc}", where)

    # --- messages and usage -----------------------------------------------------------

    def _flush(self, session_id: str) -> None:
        batch = self.pending.pop(session_id, None)
        self.held -= self.pending_bytes.pop(session_id, 0)
        if not batch:
            return
        if session_id not in self.last_id:
            last = self.store.transcript(session_id, include_compacted=True, order="desc", limit=1)
            self.last_id[session_id] = last[0].id if last else 0
        calls: list[Entry] = []  # the batch's new messages that carry usage
        try:
            stored = self.store.append(session_id, [e.message for e in batch])
        except (MessageConflict, InvalidInput):
            for entry in batch:  # find the one refused; keep the rest
                self._one(session_id, entry, calls)
        else:
            for entry, message in zip(batch, stored):
                self._stored(session_id, entry, message, calls)
        self._record(session_id, calls)
        if self.progress:
            self.progress(self.report)

    def _record(self, session_id: str, calls: list[Entry]) -> None:
        """Record one usage row per model call. Submitted together from a few threads, the
        store's writer commits them in a few group commits instead of one fsync each. A
        usage the store refuses (an impossible count) is reported; the message stays stored."""
        def record(entry: Entry) -> bool:
            try:
                self.store.record_usage(session_id, **entry.usage)
            except InvalidInput as exc:
                self._refused(entry, f"its usage was not recorded: {exc}")
                return False
            return True

        if len(calls) <= 1:
            recorded = [record(entry) for entry in calls]
        else:
            with ThreadPoolExecutor(USAGE_THREADS) as pool:
                recorded = list(pool.map(record, calls))
        self.report.usage_calls += sum(recorded)

    def _one(self, session_id: str, entry: Entry, calls: list[Entry]) -> bool:
        """Append one message; whether the store took it."""
        try:
            (message,) = self.store.append(session_id, [entry.message])
        except MessageConflict:
            self.report.conflicts += 1
        except InvalidInput as exc:
            self._refused(entry, str(exc))
        else:
            self._stored(session_id, entry, message, calls)
            return True
        return False

    def _stored(self, session_id: str, entry: Entry, message, calls: list[Entry]) -> None:
        if message.id <= self.last_id[session_id]:
            self.report.skipped += 1
            return
        self.last_id[session_id] = message.id
        self.report.messages += 1
        if entry.usage and entry.usage.get("model"):
            calls.append(entry)

    def _totals(self, event: Totals) -> None:
        session_id = event.conversation.id
        usage = dict(event.usage)
        model = str(usage.pop("model", "") or "unknown")
        recorded = dict(self.metadata[session_id].get(RECORDED) or {})
        before = recorded.get(event.counter) or {}
        growth = {k: max(0, int(usage.get(k) or 0) - int(before.get(k) or 0)) for k in USAGE_FIELDS}
        cost = max(0.0, float(usage.get("cost_usd") or 0) - float(before.get("cost_usd") or 0))
        if not any(growth.values()) and not cost:
            return
        try:
            self.store.record_usage(session_id, model=model, provider=str(usage.get("provider") or ""),
                                    cost_usd=cost, **growth)
        except InvalidInput as exc:  # an impossible count: this usage is left out, the import goes on
            self._refused(event, f"the session's usage was not recorded: {exc}")
            return
        self.report.usage_calls += 1
        recorded[event.counter] = {k: int(usage.get(k) or 0) for k in USAGE_FIELDS} | {"cost_usd": float(usage.get("cost_usd") or 0)}
        self.metadata[session_id] = dict(self.store.update_metadata(session_id, {RECORDED: recorded}).metadata)


def _text_size(message: dict[str, Any]) -> int:
    """About how much a message holds: its text, reasoning and tool calls' arguments."""
    texts = [message.get("content"), message.get("reasoning")]
    texts += [(call.get("function") or {}).get("arguments") for call in message.get("tool_calls") or []
              if isinstance(call, dict)]
    return sum(len(text) for text in texts if isinstance(text, str))
