"""Ending a turn record, and the one log line that goes with it (S-50).

Every path that ends a turn (an agent loop, the gateway's `turn_finished`, crash recovery)
ends it here, so the stored reason, the log line and the sentence a person reads come
from the same reason and the same guidance table.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Mapping

from ..guidance import explain_turn
from ..model import Turn
from ..store.contract import Store

log = logging.getLogger("sessiondb.turns")


def end_turn(store: Store, turn_id: str, reason: str, *, detail: str | None = None,
             receipts: Iterable[Mapping[str, Any]] = (), continued_by: str | None = None) -> Turn:
    turn = store.end_turn(turn_id, reason, detail=detail, receipts=receipts, continued_by=continued_by)
    failed = f" {len(turn.receipts)} file edit(s) FAILED this turn." if turn.receipts else ""
    log.info("turn %s of session %s ended %s (%s): %s%s", turn.id, turn.session_id, turn.outcome, turn.reason,
             explain_turn(turn.reason), failed)
    return turn


def end_open_turn(store: Store, session_id: str, reason: str, *, detail: str | None = None) -> Turn | None:
    """End the running turn of the conversation `session_id` belongs to, if its newest turn
    is still running (a compaction may have rotated the session during the turn)."""
    for session in reversed(store.lineage(session_id)):
        newest = store.turns(session.id, limit=1)
        if newest:
            return end_turn(store, newest[0].id, reason, detail=detail) if newest[0].reason is None else None
    return None
