"""Token and cost accounting, accumulated per (session, model, provider, task)."""

from __future__ import annotations

import apsw

from ...model import Usage, UsageRow
from . import sessions

COUNTERS = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
    "reasoning_tokens", "cost_usd",
)


def record(conn: apsw.Connection, session_id: str, key: tuple[str, str, str], amounts: dict[str, float]) -> None:
    sessions.require(conn, session_id)
    values = [amounts[name] for name in COUNTERS]
    conn.execute(
        f"INSERT INTO usage(session_id, model, provider, task, {', '.join(COUNTERS)}, calls) "
        f"VALUES (?, ?, ?, ?, {', '.join('?' * len(COUNTERS))}, 1) "
        "ON CONFLICT(session_id, model, provider, task) DO UPDATE SET "
        + ", ".join(f"{name} = {name} + excluded.{name}" for name in COUNTERS)
        + ", calls = calls + 1",
        (session_id, *key, *values),
    )


def total(conn: apsw.Connection, session_id: str) -> Usage:
    sessions.require(conn, session_id)
    rows = tuple(
        UsageRow(*row)
        for row in conn.execute(
            f"SELECT model, provider, task, {', '.join(COUNTERS)}, calls FROM usage "
            "WHERE session_id = ? ORDER BY model, provider, task",
            (session_id,),
        )
    )
    sums = {name: sum(getattr(r, name) for r in rows) for name in (*COUNTERS, "calls")}
    sums["cost_usd"] = round(sums["cost_usd"], 10)
    return Usage(session_id, **sums, rows=rows)
