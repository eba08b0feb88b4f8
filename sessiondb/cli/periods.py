"""Periods and times as the command line takes them: a period is `30m`, `12h`, `90d`, `2w`
or `45s` (or a bare number in the option's own unit); a time is a date, a date-time or an
age (a period ago)."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any

import click

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_UNIT_NAMES = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_PERIOD = re.compile(r"(\d+(?:\.\d+)?)([smhdw]?)")


def seconds_in(text: str, bare: str | None) -> float | None:
    """The seconds a period spells (`45s`, `30m`, `12h`, `90d`, `2w`), a bare number counted
    in the unit `bare` (None: a bare number is no period); None when it spells none."""
    period = _PERIOD.fullmatch(text.strip())
    if period is None or (not period.group(2) and bare is None):
        return None
    return float(period.group(1)) * _UNITS[period.group(2) or bare]


def spelled(seconds: float) -> str:
    """A period as DurationParam takes it, in the largest unit that says it whole (90d, 2w, 45s)."""
    for unit, size in sorted(_UNITS.items(), key=lambda u: -u[1])[:-1]:  # the last, seconds, says any
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds:g}s"


class DurationParam(click.ParamType):
    """A period: `30m`, `12h`, `90d`, `2w`, `45s`, or a bare number of the unit `bare`
    (seconds unless it says otherwise)."""

    name = "DURATION"

    def __init__(self, bare: str = "s") -> None:
        self.bare = bare

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        seconds = seconds_in(str(value), self.bare)
        if seconds is None:
            self.fail(f"{value!r} is not a period: give one like 30m, 12h, 90d or 2w, or a number of "
                      f"{_UNIT_NAMES[self.bare]}", param, ctx)
        return seconds


class TimeParam(click.ParamType):
    """A time: a date or date-time (`2026-05-01`, `2026-05-01T14:30`, local time unless it
    says otherwise) or an age (`30m`, `12h`, `7d`, `2w` ago)."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip()
        age = seconds_in(text, None)
        if age is not None:
            return time.time() - age
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            self.fail(f"{value!r} is not a time: give a date like 2026-05-01, a date-time like "
                      "2026-05-01T14:30, or an age like 12h or 7d", param, ctx)


TIME = TimeParam()
DURATION = DurationParam()
