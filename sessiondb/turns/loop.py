"""An agent loop's turn: interrupts with their producer, model calls in flight, redirects,
edit receipts, and the end that says why (S-50..S-52).

`AgentTurn.begin` stores the user message (with its uid) and the turn record. Any thread
may `request_interrupt(producer)`: a person (`user`) or a system producer (a watchdog,
lease loss, an inactivity timeout, any registered one). A producer nobody registered
still stops the turn, named as unregistered (`interrupted_by_system(unregistered:NAME)`)
and logged as such when it asks: refusing it would leave a runaway turn. The reason is
fixed when the interrupt is requested, from whether a model call was in flight at that
moment, and the first request wins: a watchdog firing after the person pressed stop does
not rename the stop. The end writes the record, logs one line and offers the sentence,
all from the one guidance table, so the three agree.

A correction that arrives during a turn cancels the attempt and is stored as a user
message; when corrections reach `max_redirects`, the turn ends (`redirect_limit`) and the
correction that was waiting becomes the next turn, stored with its identity, never
dropped (S-51).
"""

from __future__ import annotations

import logging
import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from ..errors import InvalidInput
from ..guidance import explain_turn, interrupt_reason, registered
from ..model import Message, Turn
from ..store.contract import Store
from .checkpoints import Checkpoint, Checkpoints
from .receipts import EditReceipts, report
from .records import end_turn

MAX_REDIRECTS = 3  # corrections one turn takes before it ends and the next one begins
log = logging.getLogger("sessiondb.turns")


class AgentTurn:
    """One running turn of an agent loop. Thread-safe: interrupts come from anywhere."""

    def __init__(self, store: Store, record: Turn, *, max_redirects: int = MAX_REDIRECTS,
                 checkpoints: Checkpoints | None = None) -> None:
        if isinstance(max_redirects, bool) or not isinstance(max_redirects, int) or max_redirects < 1:
            raise InvalidInput(f"max_redirects must be a positive integer, not {max_redirects!r}")
        self.store = store
        self.record = record
        self.max_redirects = max_redirects
        self.checkpoints = checkpoints
        self.edits = EditReceipts(record.cwd or os.getcwd())
        self._lock = threading.Lock()
        self._calls = 0
        self._interrupt: str | None = None
        self._stop = threading.Event()
        self._redirects = 0

    @classmethod
    def begin(cls, store: Store, session_id: str, message: Message | Mapping[str, Any], *,
              cwd: str | os.PathLike[str] | None = None, max_redirects: int = MAX_REDIRECTS,
              checkpoints: Checkpoints | None = None) -> "AgentTurn":
        """Store the user message that starts a turn, then the turn's record."""
        _require_user(message)
        stored = store.append(session_id, message)[-1]
        where = os.path.realpath(os.fspath(cwd)) if cwd is not None else os.getcwd()
        record = store.begin_turn(stored.session_id, user_uid=stored.uid, cwd=where)
        return cls(store, record, max_redirects=max_redirects, checkpoints=checkpoints)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def session_id(self) -> str:
        return self.record.session_id

    # --- interrupts ------------------------------------------------------------------------

    @contextmanager
    def model_call(self) -> Iterator[None]:
        """Mark a model call in flight for the duration of the block."""
        with self._lock:
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1

    def request_interrupt(self, producer: str = "user") -> str:
        """Ask the loop to stop; returns the reason the turn will end with (the first one asked).
        Never refused: a producer nobody registered stops the turn too, named as unregistered."""
        with self._lock:
            reason = interrupt_reason(producer, in_api_call=self._calls > 0)
            if self._interrupt is None:
                self._interrupt = reason
            self._stop.set()
            first = self._interrupt
        if not registered(producer):
            log.warning("turn %s of session %s: interrupt from %r, a producer nobody registered; the turn stops "
                        "and ends as %s (register the producer with sessiondb.turns.register_producer to name it)",
                        self.id, self.session_id, producer, first)
        return first

    @property
    def interrupted(self) -> bool:
        return self._stop.is_set()

    def wait_for_interrupt(self, timeout: float | None = None) -> bool:
        """Block until an interrupt is requested (True) or `timeout` passes (False)."""
        return self._stop.wait(timeout)

    # --- the agent's file changes (S-52, S-53) -------------------------------------------------

    def before_mutation(self) -> Checkpoint | None:
        """Call before a tool changes files: the turn's working tree is snapshotted once per
        turn (None without checkpoints, or where the tools run in a container or over ssh)."""
        if self.checkpoints is None:
            return None
        return self.checkpoints.before_mutation(self.session_id, self.edits.cwd, turn_id=self.id)

    def wrote(self, path: str | os.PathLike[str]) -> None:
        """A file tool wrote `path`: a failed edit of that file is cleared, and the ledger
        keeps what the agent left so a rollback can tell a person's later edit from it."""
        self.edits.succeeded(path)
        if self.checkpoints is not None:
            self.checkpoints.record_write(self.session_id, self.edits.identity(path))

    # --- the end ---------------------------------------------------------------------------

    def finish(self) -> Turn:
        """End the turn: `completed`, or the interrupt that was requested."""
        return self._end(self._interrupt or "completed")

    def fail(self, error: BaseException | str) -> Turn:
        """End the turn on an error; an error raised after an interrupt ends it as the interrupt."""
        return self._end(self._interrupt or "failed", detail=str(error))

    def redirect(self, correction: Message | Mapping[str, Any]) -> "AgentTurn":
        """A correction cancelled the current attempt: store it and go on with this turn, or,
        at the redirect limit, end this turn and return the next one, started by it."""
        _require_user(correction)
        with self._lock:
            self._redirects += 1
            at_limit = self._redirects >= self.max_redirects
        if not at_limit:
            self.store.append(self.session_id, correction)
            return self
        # The next turn is stored before this one ends, so no moment exists where the
        # correction is neither a turn nor waiting.
        following = AgentTurn.begin(self.store, self.session_id, correction, cwd=self.edits.cwd,
                                    max_redirects=self.max_redirects, checkpoints=self.checkpoints)
        self._end("redirect_limit", continued_by=following.id)
        return following

    @property
    def explanation(self) -> str:
        """What a person reads about why the turn ended ('' while it runs), and its receipts."""
        if self.record.reason is None:
            return ""
        return "\n".join(filter(None, [explain_turn(self.record.reason), report(self.record.receipts)]))

    def _end(self, reason: str, *, detail: str | None = None, continued_by: str | None = None) -> Turn:
        standing = [f.to_dict() for f in self.edits.standing()]
        self.record = end_turn(self.store, self.id, reason, detail=detail, receipts=standing,
                               continued_by=continued_by)
        return self.record


def _require_user(message: Any) -> None:
    role = message.role if isinstance(message, Message) else (
        message.get("role") if isinstance(message, Mapping) else None)
    if role != "user":
        raise InvalidInput(f"a turn starts with a user message (role 'user'), not {role!r}")
