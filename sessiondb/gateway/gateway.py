"""Gateway: many profiles' conversations in one process, each written to its owner's store.

Every operation takes a session key, parses it once at the door into a typed SessionKey
(keys.py) and hands that on; its store is resolved from the key (owners.py); the key →
session index is the routing capability of the gateway's own store (store/contract.py).
Writes whose store is unavailable are spooled to disk before `append` returns (queue.py)
and retried by a background thread, on the key's next append and at the next start;
nothing is ever written to another profile's store instead. Crash recovery and reset
policies are in recovery.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..errors import Cause, CompressionClosed, NotFound, StorageError, classify
from ..guidance import turn_outcome
from ..home import DEFAULT_PROFILE, resolve_home
from ..keys import SessionKey, as_key
from ..model import COMPRESSION, INTERNAL_NOTIFICATION, Message, Session
from ..inputs import identity_of, new_uid, prepare_messages
from ..store.optional import RouteEntry
from ..turns.records import end_open_turn
from . import recovery
from .owners import DEFERRABLE, GatewayStore, OwnerUnavailable, Owners
from .policies import DEFAULT_FRESHNESS, parse_policy
from .queue import Backlog, Batch, KeyQueue

log = logging.getLogger("sessiondb.gateway")

#: Consecutive failures of one key logged as warnings before they are logged as errors.
WARN_FAILURES = 3


class StoreCoolingDown(StorageError):
    """The owner's store failed moments ago; the gateway waits `retry_interval` before trying it again."""


class NotAccepted(StorageError):
    """A batch could be neither stored nor spooled: the gateway did not accept it, and the
    chat platform must send it again (its `cause` is the spool's: disk_full, read_only...)."""

    def __init__(self, message: str, cause: Cause) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass
class AppendResult:
    """What an append did: rows stored now, or messages left waiting in a spool file (`spooled_to`)."""

    stored: list[Message] = field(default_factory=list)
    queued: int = 0
    spooled_to: str | None = None
    reason: str | None = None

    @property
    def deferred(self) -> bool:
        return self.queued > 0


class Gateway:
    """A gateway over the profiles of one home. Close it (or use it as a context manager).

    Every public method takes a key as a string or a SessionKey.
    """

    def __init__(
        self,
        home: str | Path | None = None,
        *,
        multiplex_profiles: bool = True,
        reset_policy: Any = None,
        freshness: float = DEFAULT_FRESHNESS,
        patience: float = 30.0,
        durability: str = "full",
        retry_interval: float = 1.0,
    ) -> None:
        self.home = resolve_home(home)
        self.reset_policy = parse_policy(reset_policy)
        self.freshness = float(freshness)
        self.retry_interval = float(retry_interval)
        self.owners = Owners(self.home, patience=patience, durability=durability,
                             multiplex_profiles=multiplex_profiles)
        self.backlog = Backlog(self.home)
        self.backlog.load()
        self._locks: dict[SessionKey, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        # profile -> monotonic time before which its failed store is not tried again: one probe
        # per interval, not one wait of `patience` per key and message
        self._cooling: dict[str, float] = {}
        # The session each key's messages last landed in, from this process: the next batch
        # goes there in one store call while it is live (`_write`).
        self._landed: dict[str, str] = {}
        self._stop = threading.Event()
        self._retrier: threading.Thread | None = None
        self._closed = False

    # --- the handle ----------------------------------------------------------------------

    def __enter__(self) -> "Gateway":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Flush what can be flushed and close every profile's store; what still waits is
        already in the spool, for the next gateway."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._retrier is not None:
            self._retrier.join()
        for key in self.backlog.waiting_keys():
            self.flush(key)
        self.owners.close()

    def _lock(self, key: SessionKey) -> threading.Lock:
        with self._locks_guard:
            lock = self._locks.get(key)
            if lock is None:
                lock = self._locks[key] = threading.Lock()
            return lock

    # --- sessions ------------------------------------------------------------------------

    def session_for(self, key: str | SessionKey, origin: Mapping[str, Any] | None = None) -> Session:
        """The live session for `key`, created if there is none; follows a compaction's tip.

        Concurrent callers for one key wait for one another and get the same session.
        OwnerUnavailable if the key's profile has no store yet (StorageError if it fails).
        `origin` fills a new session's row: source (default: the key's platform),
        user_id, title, model, metadata.
        """
        k = as_key(key)
        with self._lock(k):
            try:
                return self._session_for(k, origin)
            except DEFERRABLE as exc:
                self._store_failed(k, exc)
                raise

    def _owner(self, k: SessionKey) -> GatewayStore:
        """The key's store, unless it failed less than `retry_interval` ago."""
        until = self._cooling.get(k.profile)
        if until is not None and time.monotonic() < until:
            raise StoreCoolingDown(f"profile {k.profile!r}'s store failed moments ago; "
                                   f"it is tried again within {self.retry_interval:g}s")
        return self.owners.resolve(k)

    def _store_failed(self, k: SessionKey, exc: BaseException) -> None:
        if not isinstance(exc, (OwnerUnavailable, StoreCoolingDown)):
            self._cooling[k.profile] = time.monotonic() + self.retry_interval
        if getattr(exc, "cause", None) is Cause.REPLACED:
            self.owners.forget(k.profile)  # a refused handle never writes again: the next try reopens

    def _session_for(self, k: SessionKey, origin: Mapping[str, Any] | None) -> Session:
        store = self._owner(k)
        route = self._route(k)
        previous: Session | None = None
        if route is not None and route.profile == k.profile:
            try:
                tip = store.tip(route.session_id)
            except NotFound:
                tip = None
            if tip is not None and tip.ended_at is None and route.state != "ended":
                if tip.id != route.session_id:
                    self._route_update(k, session_id=tip.id)
                return tip
            previous = tip
        if previous is None:
            found = store.routing.live_by_key(k.text) or store.routing.legacy_by_peer(*k.peer, k.thread)
            if found is not None:
                tip = store.tip(found.id)
                if tip.ended_at is None:
                    self._route_put(k, tip.id)
                    return tip
        origin = dict(origin or {})
        # A reset child links its parent, and so inherits its lineage, only when both belong
        # to the same namespace (S-36).
        parent = previous.id if previous is not None and (previous.profile or DEFAULT_PROFILE) == k.profile else None
        session = store.create_session(
            origin.get("source") or k.platform,
            profile=None if k.is_default_profile else k.profile,
            session_key=k.text,
            chat_id=k.chat_id,
            chat_type=k.chat_type,
            thread_id=k.thread,
            user_id=origin.get("user_id"),
            title=origin.get("title"),
            model=origin.get("model"),
            metadata=origin.get("metadata"),
            parent_session_id=parent,
            parent_relation="reset" if parent else None,
        )
        self._route_put(k, session.id)
        return session

    # --- the routing index (always the gateway's own store) -----------------------------

    def _route(self, k: SessionKey) -> RouteEntry | None:
        try:
            return self.owners.index().get(k.text)
        except DEFERRABLE as exc:
            log.warning("routing index unavailable (%s); looking %s up in its owner's store", exc, k)
            return None

    def _route_put(self, k: SessionKey, session_id: str) -> None:
        try:
            self.owners.index().put(k.text, session_id, k.profile)
        except DEFERRABLE as exc:
            log.warning("could not record the route of %s (%s); its store's session_key still finds it", k, exc)

    def _route_update(self, k: SessionKey, **changes: Any) -> None:
        try:
            self.owners.index().update(k.text, **changes)
        except DEFERRABLE as exc:
            log.warning("could not update the route of %s (%s)", k, exc)

    def routes(self, *, profile: str | None = None, states: tuple[str, ...] | None = None) -> list[RouteEntry]:
        """The routing entries, by key (see RoutingIndex.entries)."""
        return self.owners.index().entries(profile=profile, states=states)

    # --- turns ---------------------------------------------------------------------------

    def turn_started(self, key: str | SessionKey, origin: Mapping[str, Any] | None = None, *,
                     user_uid: str | None = None) -> Session:
        """Mark a turn running for `key` and begin its turn record (`user_uid`: the user
        message that starts it); turn_finished ends both, recover after a crash."""
        k = as_key(key)
        session = self.session_for(k, origin)
        self._route_update(k, state="running", turn_started_at=time.time())
        self._owner(k).begin_turn(session.id, user_uid=user_uid)
        return session

    def turn_finished(self, key: str | SessionKey, reason: str = "completed", *, detail: str | None = None) -> None:
        """The key's turn ended, for `reason` (a name from the guidance table: `completed`,
        `interrupted_by_user`, `interrupted_by_system(gateway_inactivity_timeout)`...)."""
        k = as_key(key)
        turn_outcome(reason)  # a bad reason is refused before anything is written
        route = self._route(k)
        if route is not None:
            try:
                end_open_turn(self._owner(k), route.session_id, reason, detail=detail)
            except DEFERRABLE as exc:
                log.warning("could not record why the turn of %s ended (%s): %s", k, reason, exc)
        self._route_update(k, state="idle", turn_started_at=None)

    def resume_pending(self) -> list[str]:
        """Keys whose turn was running when an earlier process died, to be resumed."""
        return [r.key for r in self.routes(states=("resume_pending",))]

    # --- messages ------------------------------------------------------------------------

    def append(self, key: str | SessionKey, messages: Any, *, internal: bool = False) -> AppendResult:
        """Store messages in the key's session, or spool them if its store is unavailable.

        Input is validated first (InvalidInput, nothing queued). Each message gets its
        uid and arrival time before it is queued, so replays are idempotent. A deferred
        batch is on disk before this returns (S-39); when the spool cannot keep it either,
        NotAccepted says so and nothing of it is kept. A key with batches waiting queues
        new ones behind them. `internal` stores notifications injected as user turns with
        display kind 'internal_notification' (never shown to a model as such, S-09).
        """
        k = as_key(key)
        batch = _prepare(messages, internal)
        with self._lock(k):
            q = self.backlog.waiting(k)
            if q is not None:
                why = "earlier messages of this key are waiting"
                spooled = self._spool(k, batch, "queued", why)
                if time.monotonic() >= q.next_attempt:
                    self._flush_locked(k, q)
                return AppendResult(queued=len(batch), spooled_to=str(spooled), reason=why)
            try:
                return AppendResult(stored=self._write(k, batch))
            except DEFERRABLE as exc:
                self._store_failed(k, exc)
                if _kept_for_its_generation(exc):
                    return AppendResult(queued=len(batch), spooled_to=exc.spooled_to, reason=str(exc))
                spooled = self._spool(k, batch, _cause(exc), f"its store is unavailable ({exc})")
                self._failed(k, self.backlog.queue(k), exc)
                return AppendResult(queued=len(batch), spooled_to=str(spooled), reason=str(exc))

    def _spool(self, k: SessionKey, batch: Batch, cause: str, why: str) -> Path:
        try:
            return self.backlog.add(k, batch, cause)
        except OSError as exc:
            raise NotAccepted(f"{len(batch)} message(s) for {k} were not accepted: {why}, and the gateway's "
                              f"spool {self.backlog.directory} could not keep them ({exc}); make room there or "
                              f"make it writable, then send them again", classify(exc)) from exc

    def _write(self, k: SessionKey, batch: Batch) -> list[Message]:
        store = self._owner(k)
        landed = self._landed.get(k.text)
        if landed is not None:
            # One store call: stored there unless that session ended since (another process
            # reset the key, say); then the route says where the key's messages go now.
            try:
                rows = store.extend(landed, lambda root, _tail, _history: batch if _live(root) else [], newest=0)
            except (CompressionClosed, NotFound):
                rows = []
            if rows:
                return self._landed_in(k, landed, rows)
            del self._landed[k.text]
        session_id = self._session_for(k, None).id
        try:
            rows = store.append(session_id, batch)
        except (CompressionClosed, NotFound):
            rows = store.append(self._session_for(k, None).id, batch)
        return self._landed_in(k, session_id, rows)

    def _landed_in(self, k: SessionKey, session_id: str, rows: list[Message]) -> list[Message]:
        """`rows` were stored for `k`, sent to `session_id`: the route follows where they landed."""
        self._cooling.pop(k.profile, None)
        self._landed[k.text] = rows[-1].session_id
        if rows[-1].session_id != session_id:
            # The append was redirected to a compaction's tip: the route follows (one field).
            self._route_update(k, session_id=rows[-1].session_id)
        return rows

    # --- the retry queue -----------------------------------------------------------------

    def flush(self, key: str | SessionKey) -> int:
        """Send the key's waiting messages, oldest first; returns how many were stored."""
        k = as_key(key)
        with self._lock(k):
            q = self.backlog.waiting(k)
            return 0 if q is None else self._flush_locked(k, q)

    def _flush_locked(self, k: SessionKey, q: KeyQueue) -> int:
        sent = 0
        try:
            for path in list(q.files):
                batch = self.backlog.read_file(path)
                sent += self._send(k, batch)
                self.backlog.drop_file(k, path)
        except DEFERRABLE as exc:
            self._store_failed(k, exc)
            self._failed(k, q, exc)
            return sent
        except Exception as exc:  # noqa: BLE001 - a batch its store refuses stays queued, never dropped
            self._failed(k, q, exc)
            return sent
        if q.failures:
            log.info("%s: %d waiting message(s) stored after %d failed attempt(s)", k, sent, q.failures)
        self.backlog.settle(k)
        return sent

    def _send(self, k: SessionKey, batch: Batch) -> int:
        """Write a waiting batch; how many messages were stored (none when the replaced file
        refused it: it then waits in the store's spool for that file, not in this queue)."""
        try:
            self._write(k, batch)
        except DEFERRABLE as exc:
            if not _kept_for_its_generation(exc):
                raise
            self._store_failed(k, exc)
            return 0
        return len(batch)

    def _failed(self, k: SessionKey, q: KeyQueue, exc: BaseException) -> None:
        self._start_retrier()
        if isinstance(exc, StoreCoolingDown):  # not an attempt: another key's probe just failed
            q.next_attempt = self._cooling.get(k.profile, 0.0)
            return
        q.failures += 1
        q.next_attempt = time.monotonic() + self.retry_interval
        level = logging.WARNING if q.failures <= WARN_FAILURES else logging.ERROR
        log.log(level, "%s: store unavailable (%s); %d spool file(s) wait (attempt %d)", k, exc,
                len(q.files), q.failures)

    def flush_all(self, *, due_only: bool = False) -> int:
        """Flush every key with messages waiting (with `due_only`, those whose retry is due).
        Asked for now, it tries even a store that failed moments ago: the pause after a
        failure spares appends and the retrier, not a caller who knows the store is back."""
        due_by = time.monotonic() if due_only else None
        if not due_only:
            self._cooling.clear()
        return sum(self.flush(k) for k in self.backlog.waiting_keys(due_by=due_by))

    def _start_retrier(self) -> None:
        if self._retrier is not None or self._closed:
            return
        self._retrier = threading.Thread(target=self._retry_loop, name="sessiondb-gateway-retry", daemon=True)
        self._retrier.start()

    def _retry_loop(self) -> None:
        while not self._stop.wait(max(0.05, self.retry_interval / 4)):
            try:
                self.flush_all(due_only=True)
            except Exception:  # noqa: BLE001 - the retrier must outlive any one failure
                log.exception("gateway retry pass failed")

    # --- recovery and status -------------------------------------------------------------

    def recover(self, now: float | None = None) -> recovery.RecoveryReport:
        """Run at start: crash markers, reset policies, and the spool of earlier processes."""
        report = recovery.recover(self.owners, self.backlog, freshness=self.freshness,
                                  reset_policy=self.reset_policy, now=time.time() if now is None else now)
        report.replayed = self.flush_all()
        report.still_waiting = len(self.backlog.waiting_keys())
        return report

    def status(self) -> dict[str, Any]:
        """Routing entries and waiting messages, per profile."""
        return recovery.status(self.owners.index(), self.backlog, self.home)


def _prepare(messages: Any, internal: bool) -> Batch:
    if isinstance(messages, (Message, Mapping)):
        messages = [messages]
    elif isinstance(messages, (str, bytes)) or not isinstance(messages, Iterable):
        prepare_messages(messages)  # raises the store's own InvalidInput
    batch: Batch = []
    now = time.time()
    for m in messages:
        data = m.to_dict() if isinstance(m, Message) else dict(m) if isinstance(m, Mapping) else m
        if isinstance(data, dict):
            for assigned in ("id", "session_id", "seq"):
                data.pop(assigned, None)
            uid = identity_of(m)  # a resumed message keeps its stored uid
            data["uid"] = new_uid() if uid is None else uid
            if data.get("timestamp") is None:
                data["timestamp"] = now
            if internal:
                data["role"] = "user"
                data["display_kind"] = INTERNAL_NOTIFICATION
        batch.append(data)
    prepare_messages(batch)  # validate now: bad input is refused, never queued
    return batch


def _live(session: Session) -> bool:
    """Whether a key's messages still go to `session`: not ended, or only rotated (the store
    follows a rotation to its tip)."""
    return session.ended_at is None or session.end_reason == COMPRESSION


def _kept_for_its_generation(exc: BaseException) -> bool:
    """A batch the replaced file refused is in the store's spool, waiting for that file:
    queued again, it would be written into the file that replaced it (S-13, S-49)."""
    return getattr(exc, "cause", None) is Cause.REPLACED and getattr(exc, "spooled_to", None) is not None


def _cause(exc: BaseException) -> str:
    if isinstance(exc, OwnerUnavailable):
        return "no_owner_store"
    return getattr(getattr(exc, "cause", None), "value", None) or type(exc).__name__
