"""Token and cost accounting, accumulated per (session, model, provider, task), and the
store's overall counts."""

from __future__ import annotations

import psycopg

from ...model import Usage, UsageRow
from . import sessions

COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost_usd")
_ADD = ", ".join(f"{name} = usage.{name} + excluded.{name}" for name in COUNTERS)


def record(conn: psycopg.Connection, session_id: str, key: tuple[str, str, str], amounts: dict[str, float]) -> None:
    sessions.require(conn, session_id)
    conn.execute(
        f"INSERT INTO usage(session_id, model, provider, task, {', '.join(COUNTERS)}, calls) "
        f"VALUES (%s, %s, %s, %s, {', '.join(['%s'] * len(COUNTERS))}, 1) "
        f"ON CONFLICT (session_id, model, provider, task) DO UPDATE SET {_ADD}, calls = usage.calls + 1",
        (session_id, *key, *(amounts[name] for name in COUNTERS)))


def total(conn: psycopg.Connection, session_id: str) -> Usage:
    sessions.require(conn, session_id)
    rows = tuple(UsageRow(*row) for row in conn.execute(
        f"SELECT model, provider, task, {', '.join(COUNTERS)}, calls FROM usage WHERE session_id = %s "
        "ORDER BY model, provider, task", (session_id,)))
    sums = {name: sum(getattr(r, name) for r in rows) for name in (*COUNTERS, "calls")}
    sums["cost_usd"] = round(sums["cost_usd"], 10)
    return Usage(session_id, **sums, rows=rows)


def counts(conn: psycopg.Connection) -> dict[str, int | float]:
    """Sessions by flag, messages by state, usage totals."""
    total_sessions, pinned, archived, hidden = conn.execute(
        "SELECT count(*), coalesce(sum(pinned), 0), coalesce(sum(archived), 0), coalesce(sum(hidden), 0) "
        "FROM sessions").fetchone()
    by_state = dict(conn.execute("SELECT state, count(*) FROM messages GROUP BY state").fetchall())
    calls, cost = conn.execute("SELECT coalesce(sum(calls), 0), coalesce(sum(cost_usd), 0) FROM usage").fetchone()
    return {
        "sessions": total_sessions, "pinned": int(pinned), "archived": int(archived), "hidden": int(hidden),
        "messages": by_state.get("active", 0), "compacted_messages": by_state.get("compacted", 0),
        "rewound_messages": by_state.get("rewound", 0), "usage_calls": int(calls), "cost_usd": round(cost, 10),
    }
