"""Token and cost accounting, on every backend: amounts accumulated per (session, model,
provider, task), each call counted once.

A backend may run a unit of work again when its connection breaks, and a connection can
break after the store committed but before the caller heard it: so each record_usage call
carries an id of its own, minted once per call (outside the unit of work), and a call whose
id is stored already adds nothing. Ids older than `keep` seconds are pruned by the
session's next call.
"""

from __future__ import annotations

from typing import Callable

from ..model import Usage, UsageRow
from . import sessions
from .commands import RecordUsage
from .rows import Rows, below

COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd")
#: Seconds a call's id is kept at least: longer than any retry of the call (a backend that
#: retries for longer asks for twice its patience, `keep_for`).
CALL_MEMORY = 3600.0


def keep_for(patience: float) -> float:
    """How long a call's id is kept on a backend that retries a call for `patience` seconds."""
    return max(2 * patience, CALL_MEMORY)


def record(rows: Rows, command: RecordUsage, *, call_id: str, clock: Callable[[], float], keep: float) -> None:
    """Add one record_usage call's amounts, once: `call_id` is written in the same transaction, so the
    same call run again (its first commit landed, the acknowledgement did not) adds nothing."""
    sid = command.session_id
    sessions.require(rows, sid)
    now = clock()
    rows.delete("usage_calls", {"session_id": sid, "recorded_at": below(now - keep)})
    if rows.insert("usage_calls", [{"call_id": call_id, "session_id": sid, "recorded_at": now}],
                   skip_taken=True) == [None]:
        return
    key = {"session_id": sid, "model": command.model, "provider": command.provider, "task": command.task}
    amounts = {name: command.amounts[name] for name in COUNTERS}
    # The first call of a key inserts its row; a later one (or one that met a concurrent
    # first) adds to it.
    if rows.insert("usage", [{**key, **amounts, "calls": command.calls}], skip_taken=True) == [None]:
        rows.update("usage", key, add={**amounts, "calls": command.calls})


def total(rows: Rows, session_id: str) -> Usage:
    """The session's rows (by model, provider, task) and their sums."""
    sessions.require(rows, session_id)
    found = rows.select("usage", {"session_id": session_id}, columns=("model", "provider", "task", *COUNTERS, "calls"),
                        order=("model", "provider", "task"))
    usage_rows = tuple(UsageRow(**row) for row in found)
    sums = {name: sum(getattr(r, name) for r in usage_rows) for name in (*COUNTERS, "calls")}
    sums["cost_usd"] = round(sums["cost_usd"], 10)
    return Usage(session_id, **sums, rows=usage_rows)
