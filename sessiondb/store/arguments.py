"""Checks of the plain arguments of store calls (ids, flags, counts, limits, leases).

Message and session fields are checked by `sessiondb.model`; these are the small
arguments every call shares. Each raises InvalidInput naming the argument.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidInput
from ..model import Lease
from ..inputs import check_label

MAX_PAGE = 1000  # rows a listing or a search returns at most
MAX_TTL = 7 * 24 * 3600.0  # a compaction lease lasts at most a week between refreshes


def session_id(value: Any) -> str:
    return check_label(value, "session_id", required=True)


def flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"{what} must be true or false, not {value!r}")
    return value


def count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"{what} must be a non-negative integer, not {value!r}")
    return value


def optional_count(value: Any, what: str) -> int | None:
    return None if value is None else count(value, what)


def limit(value: Any) -> int:
    value = count(value, "limit")
    if not 1 <= value <= MAX_PAGE:
        raise InvalidInput(f"limit must be between 1 and {MAX_PAGE}")
    return value


def cost(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
        raise InvalidInput(f"cost_usd must be a non-negative number, not {value!r}")
    return float(value)


def ttl(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= MAX_TTL:
        raise InvalidInput(f"ttl must be a number of seconds above 0 and at most {MAX_TTL:.0f}, not {value!r}")
    return float(value)


def lease(value: Any) -> Lease:
    if not isinstance(value, Lease):
        raise InvalidInput(f"expected the Lease that begin_compaction returned, not {type(value).__name__}")
    return value
