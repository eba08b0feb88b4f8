"""Usage across a profile: tokens and cost by model, and by day, from the Store contract.

A store accumulates usage per session and (model, provider, task), without the time of
each call, so a session's usage is counted on the day (UTC) it was last active. Built from
`list_sessions` and `usage` only, so it works on every backend; one read per session.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from .store.contract import Store

COUNTERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
            "cost_usd", "calls")
_PAGE = 1000


@dataclass
class Totals:
    """Summed counters of some usage rows."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    def add(self, row: Any) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(row, name))


@dataclass
class ModelTotals(Totals):
    model: str = ""
    provider: str = ""


@dataclass
class DayTotals(Totals):
    day: str = ""  # YYYY-MM-DD, UTC


@dataclass
class ProfileUsage:
    """A profile's usage: totals, one entry per (model, provider) and one per active day."""

    profile: str | None
    sessions: int = 0  # sessions with any usage
    totals: Totals = field(default_factory=Totals)
    models: list[ModelTotals] = field(default_factory=list)
    days: list[DayTotals] = field(default_factory=list)  # oldest first, days without usage left out

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["totals"]["cost_usd"] = round(data["totals"]["cost_usd"], 10)
        return data


def profile_usage(store: Store, *, since: float | None = None, until: float | None = None) -> ProfileUsage:
    """Usage of every session (archived and hidden included) last active in [since, until)."""
    report = ProfileUsage(store.profile)
    models: dict[tuple[str, str], ModelTotals] = {}
    days: dict[str, DayTotals] = {}
    cursor = None
    while True:
        page = store.list_sessions(include_archived=True, include_hidden=True, since=since, until=until,
                                   limit=_PAGE, cursor=cursor)
        for session in page.items:
            usage = store.usage(session.id)
            if not usage.calls:
                continue
            report.sessions += 1
            report.totals.add(usage)
            when = session.last_activity_at or session.started_at
            day = datetime.fromtimestamp(when, timezone.utc).strftime("%Y-%m-%d")
            days.setdefault(day, DayTotals(day=day)).add(usage)
            for row in usage.rows:
                models.setdefault((row.model, row.provider), ModelTotals(model=row.model, provider=row.provider)).add(row)
        cursor = page.cursor
        if cursor is None:
            break
    report.models = sorted(models.values(), key=lambda m: (-m.cost_usd, -(m.input_tokens + m.output_tokens)))
    report.days = [days[d] for d in sorted(days)]
    return report
