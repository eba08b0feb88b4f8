"""The gateway's routing index, and the session lookups a gateway makes by key and peer, on every backend.

The index (S-32) maps a session key to the session that serves it, the profile that owns
it and the state of its turn: `idle`, `running` (a turn is in flight), `resume_pending`
(a turn was running when the process died) or `ended`. It is the `gateway_routes` table
of the gateway's own store, whatever profile a key names, so startup recovery reads the
copy the last writer wrote.

Writes are single-entry and field-wise: `put` inserts or rewrites one entry (structural
changes: a new session for a key), `update` changes named fields of one entry and can be
made conditional on what the caller last read (`expect`), so recovery never replaces a
live entry with a thinner or older copy. The condition is part of the update's own
`where`, so two gateways racing on one key cannot both win. Nothing here touches the
`sessions` table: a routing write is never user activity (S-08).

The lookups (`live_by_key`, `legacy_by_peer`) read a store's `sessions` rows; a gateway
runs them on the store that owns the key. `RoutingTable` is the `RoutingIndex`
(store/optional.py) every store offers as its `routing`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Callable

from ..errors import InvalidInput
from ..model import Route, Session
from . import sessions
from .backend import Backend
from .rows import Row, Rows, Taken, active_at, one_of

STATES = ("idle", "running", "resume_pending", "ended")
FIELDS = ("session_id", "profile", "state", "turn_started_at", "updated_at")


def _route(row: Row) -> Route:
    return Route(**row)


def get(rows: Rows, key: str) -> Route | None:
    found = rows.select("gateway_routes", {"key": key})
    return _route(found[0]) if found else None


def put(rows: Rows, key: str, session_id: str, profile: str, clock: Callable[[], float]) -> Route:
    values = {"session_id": session_id, "profile": profile, "state": "idle", "turn_started_at": None,
              "updated_at": clock()}
    if not rows.update("gateway_routes", {"key": key}, set=values):
        try:
            rows.insert("gateway_routes", [{"key": key, **values}])
        except Taken:  # another writer put the key first: this put rewrites it, as it would have
            rows.update("gateway_routes", {"key": key}, set=values)
    return Route(key, **values)


def update(rows: Rows, key: str, changes: dict[str, Any], expect: dict[str, Any],
           clock: Callable[[], float]) -> Route | None:
    changes = {"updated_at": clock(), **changes}
    # A field that differs from `expect` matches nothing: a live entry is never overwritten.
    if not rows.update("gateway_routes", {**expect, "key": key}, set=changes):
        return None
    return get(rows, key)


def entries(rows: Rows, profile: str | None, states: tuple[str, ...] | None) -> list[Route]:
    where: dict[str, Any] = {}
    if profile is not None:
        where["profile"] = profile
    if states:
        where["state"] = one_of(states)
    return [_route(row) for row in rows.select("gateway_routes", where, order=("key",))]


def _most_recent(found: list[Row]) -> Session | None:
    """The most recently active of open session rows (ties: the greatest id)."""
    if not found:
        return None
    return sessions.from_row(max(found, key=lambda r: (active_at(r), r["id"])))


def live_by_key(rows: Rows, key: str) -> Session | None:
    return _most_recent(rows.select("sessions", {"session_key": key, "ended_at": None}))


def legacy_by_peer(rows: Rows, platform: str, chat_type: str, chat_id: str, thread: str | None,
                   owner: str | None) -> Session | None:
    found = rows.select("sessions", {"source": platform, "chat_type": chat_type, "chat_id": chat_id,
                                     "session_key": None, "ended_at": None})
    # Only rows of the store's owner are adopted (S-36): a DM's chat id is the same for
    # every bot, so another profile's row with the same peer tuple is not ours.
    owners = (None, "main") if owner is None else (owner,)
    return _most_recent([r for r in found if (r["thread_id"] or "") == (thread or "") and r["profile"] in owners])


class RoutingTable:
    """The routing index and gateway lookups of one store (promises: RoutingIndex,
    store/optional.py), each call one unit of work on the store's backend."""

    def __init__(self, backend: Backend, owner: str | None, clock: Callable[[], float]) -> None:
        self._backend = backend
        self._owner = owner
        self._clock = clock

    def get(self, key: str) -> Route | None:
        return self._backend.read(partial(get, key=_text(key, "key")))

    def put(self, key: str, session_id: str, profile: str) -> Route:
        """Insert or rewrite the entry for `key` (a new session serves it, its turn idle)."""
        return self._backend.write(partial(put, key=_text(key, "key"), session_id=_text(session_id, "session_id"),
                                           profile=_text(profile, "profile"), clock=self._clock))

    def update(self, key: str, *, expect: Mapping[str, Any] | None = None, **changes: Any) -> Route | None:
        """Change the named fields of one entry; None if it is absent or differs from `expect`."""
        unknown = (set(changes) | set(expect or {})) - set(FIELDS)
        if unknown:
            raise InvalidInput(f"unknown routing field(s): {', '.join(sorted(unknown))}")
        if "state" in changes and changes["state"] not in STATES:
            raise InvalidInput(f"a routing state is one of {', '.join(STATES)} (got {changes['state']!r})")
        return self._backend.write(partial(update, key=_text(key, "key"), changes=changes,
                                           expect=dict(expect or {}), clock=self._clock))

    def entries(self, *, profile: str | None = None, states: tuple[str, ...] | None = None) -> list[Route]:
        return self._backend.read(partial(entries, profile=profile, states=states))

    def live_by_key(self, key: str) -> Session | None:
        """The most recently active open session of this store whose session_key is `key`."""
        return self._backend.read(partial(live_by_key, key=_text(key, "key")))

    def legacy_by_peer(self, platform: str, chat_type: str, chat_id: str, thread: str | None = None) -> Session | None:
        """An open, unkeyed session of this store's owner for the peer tuple, or None (S-36)."""
        return self._backend.read(partial(legacy_by_peer, platform=platform, chat_type=chat_type, chat_id=chat_id,
                                          thread=thread, owner=self._owner))


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be non-empty text")
    return value
