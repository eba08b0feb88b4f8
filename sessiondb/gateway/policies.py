"""Reset policies (S-34) and the freshness of crash markers (S-33), as pure functions of time.

A policy says whether a session whose last user activity was at `last_activity_at` has
expired by `now`. Times come from the store (the durable `last_activity_at`), never from
memory, so a policy gives the same answer after a restart. A missing or invalid time
(None, NaN, in the future beyond a minute of clock skew, not a number) counts as old:
it never keeps a session alive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..errors import InvalidInput

#: How long a running-turn marker stays worth resuming (S-33), by default.
DEFAULT_FRESHNESS = 15 * 60.0
_SKEW = 60.0


def valid_time(value: Any, now: float) -> float | None:
    """`value` as seconds since the epoch if it is a usable past time, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if value <= 0 or value > now + _SKEW:
        return None
    return float(value)


def is_fresh(marked_at: Any, now: float, window: float) -> bool:
    """Whether a marker set at `marked_at` is within `window` seconds of `now`."""
    when = valid_time(marked_at, now)
    return when is not None and now - when <= window


@dataclass(frozen=True)
class IdleReset:
    """End a session idle for more than `max_idle` seconds."""

    max_idle: float
    name = "idle"

    def expired(self, last_activity_at: Any, now: float) -> bool:
        when = valid_time(last_activity_at, now)
        return when is None or now - when > self.max_idle


@dataclass(frozen=True)
class DailyReset:
    """End a session whose last activity came before the latest daily reset at `hour` (local time)."""

    hour: int = 4
    name = "daily"

    def expired(self, last_activity_at: Any, now: float) -> bool:
        when = valid_time(last_activity_at, now)
        if when is None:
            return True
        current = datetime.fromtimestamp(now)
        boundary = current.replace(hour=self.hour, minute=0, second=0, microsecond=0)
        if boundary > current:
            boundary -= timedelta(days=1)
        return when < boundary.timestamp()


Policy = IdleReset | DailyReset


def parse_policy(spec: Any) -> Policy | None:
    """None, a policy object, or text: 'none', 'idle:SECONDS', 'daily[:HOUR]'."""
    if spec is None or isinstance(spec, (IdleReset, DailyReset)):
        return spec
    if not isinstance(spec, str):
        raise InvalidInput(f"a reset policy is None, 'idle:SECONDS' or 'daily[:HOUR]', not {spec!r}")
    name, _, arg = spec.partition(":")
    try:
        if name == "none" and not arg:
            return None
        if name == "idle":
            seconds = float(arg)
            if not math.isfinite(seconds) or seconds <= 0:
                raise ValueError
            return IdleReset(seconds)
        if name == "daily":
            hour = int(arg) if arg else 4
            if not 0 <= hour <= 23:
                raise ValueError
            return DailyReset(hour)
    except ValueError:
        pass
    raise InvalidInput(f"a reset policy is 'none', 'idle:SECONDS' or 'daily[:HOUR]' (0-23), not {spec!r}")
