"""Startup recovery (S-33, S-34) and the gateway's status report.

`recover` reads the one routing index in the gateway's own store (S-32). A turn still
marked running was cut short by the death of an earlier process: within the freshness
window it becomes `resume_pending` (the next turn picks it up); past it, or with no valid
start time, the session is ended instead. Either way its running turn record ends with
that reason (`resume_pending` or `stale_turn`). Then the reset policy, if any, is applied to
every recovered session from its durable `last_activity_at` in its owner's store. Each
routing change is a conditional single-field update against the entry as read, so an
entry a live process changed meanwhile is left alone. Last, the spool of earlier
processes is replayed, each key in order (by the Gateway, which owns the flush: this
module sits below gateway.py and never imports it). Every store is resolved from the key,
parsed once per entry; an owner without a store leaves its entries as they are, for the
next start.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NotFound
from ..keys import SessionKey, parse
from ..store.contract import Store
from ..store.optional import RouteEntry, RoutingIndex
from ..turns.records import end_open_turn
from .owners import DEFERRABLE, Owners
from .policies import Policy, is_fresh
from .queue import Backlog

#: End reasons written by recovery (of the session and of its running turn), and the
#: reason of a turn cut short that the next turn picks up.
STALE_TURN = "stale_turn"
RESUME_PENDING = "resume_pending"


@dataclass
class RecoveryReport:
    resumed: list[str] = field(default_factory=list)  # keys marked resume_pending
    ended_stale: list[str] = field(default_factory=list)  # running markers past the window
    reset: list[str] = field(default_factory=list)  # ended by the reset policy
    deferred: list[str] = field(default_factory=list)  # owner store unavailable: left for later
    spool_files: int = 0  # spool files waiting when recovery began (earlier processes' included)
    replayed: int = 0  # messages stored from the queue and the spool
    still_waiting: int = 0  # keys whose messages still wait

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def recover(owners: Owners, backlog: Backlog, *, freshness: float, reset_policy: Policy | None,
            now: float) -> RecoveryReport:
    """Crash markers and reset policies, over every entry of the routing index.

    Indexes the spool of earlier processes first (so `spool_files` counts them); the
    caller replays it and fills `replayed` and `still_waiting`.
    """
    report = RecoveryReport(spool_files=backlog.load())
    index = owners.index()
    for route in index.entries(states=("running", "resume_pending", "idle")):
        expect = {"state": route.state, "turn_started_at": route.turn_started_at,
                  "session_id": route.session_id}
        try:
            key = parse(route.key)
            store = owners.resolve(key)
        except DEFERRABLE:
            report.deferred.append(route.key)
            continue
        except ValueError:
            continue  # not a key this release can parse: left alone
        if route.state == "running":
            if is_fresh(route.turn_started_at, now, freshness):
                if index.update(key.text, expect=expect, state="resume_pending") is not None:
                    end_open_turn(store, route.session_id, RESUME_PENDING)
                    report.resumed.append(key.text)
                continue
            if _end(index, store, key, route, expect, STALE_TURN):
                end_open_turn(store, route.session_id, STALE_TURN)
                report.ended_stale.append(key.text)
            continue
        if reset_policy is None:
            continue
        try:
            session = store.tip(route.session_id)
        except NotFound:
            session = None
        except DEFERRABLE:
            report.deferred.append(key.text)
            continue
        if session is not None and session.ended_at is not None:
            continue
        last = None if session is None else session.last_activity_at
        if reset_policy.expired(last, now):
            if _end(index, store, key, route, expect, f"{reset_policy.name}_reset"):
                report.reset.append(key.text)
    return report


def _end(index: RoutingIndex, store: Store, key: SessionKey, route: RouteEntry, expect: dict[str, Any],
         reason: str) -> bool:
    """End the routed session (its tip) in its owner's store and mark the entry ended."""
    try:
        tip = store.tip(route.session_id)
        if tip.ended_at is None:
            store.end_session(tip.id, reason)
    except NotFound:
        pass
    return index.update(key.text, expect=expect, state="ended", turn_started_at=None) is not None


def status(index: RoutingIndex, backlog: Backlog, home: Path) -> dict[str, Any]:
    """Per profile: routing entries by state, and the messages waiting in the spool."""
    profiles: dict[str, dict[str, Any]] = {}

    def row(profile: str) -> dict[str, Any]:
        return profiles.setdefault(profile, {
            "routes": 0, "idle": 0, "running": 0, "resume_pending": 0, "ended": 0,
            "keys_waiting": 0, "spool_files": 0, "spooled": 0,
        })

    routes = index.entries()
    for route in routes:
        r = row(route.profile)
        r["routes"] += 1
        r[route.state] += 1
    for profile, counts in backlog.counts().items():
        r = row(profile)
        r["keys_waiting"] += counts["keys"]
        r["spool_files"] += counts["spool_files"]
        r["spooled"] += counts["spooled"]
    return {"home": str(home), "profiles": profiles, "routes": [route.to_dict() for route in routes]}


__all__ = ["RecoveryReport", "recover", "status"]
