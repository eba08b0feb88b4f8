"""The gateway's routing index, and the session lookups a gateway makes by key and peer.

The index (S-32) maps a session key to the session that serves it, the profile that owns
it and the state of its turn: `idle`, `running` (a turn is in flight), `resume_pending`
(a turn was running when the process died) or `ended`. It lives in one table of the
gateway's own store (migration 0004_gateway_routing), whatever profile a key names, so
startup recovery reads the copy the last writer wrote.

Writes are single-entry and field-wise: `put` inserts or rewrites one entry (structural
changes: a new session for a key), `update` changes named fields of one entry and can be
made conditional on what the caller last read (`expect`), so recovery never replaces a
live entry with a thinner or older copy. Nothing here touches the `sessions` table: a
routing write is never user activity (S-08).

The lookups (`live_by_key`, `legacy_by_peer`) read a store's `sessions` rows; a gateway
runs them on the store that owns the key. `RoutingTable` is this backend's
`RoutingIndex` (store/contract.py), reached through the store's `routing` (`SQLiteBackend.routing`).
"""

from __future__ import annotations

import json
import time
from functools import partial
from collections.abc import Mapping
from typing import Any, Callable, TypeVar

import apsw

from ...errors import InvalidInput
from ...model import Route, Session
from ..rows import TABLES

#: The session columns a lookup reads, in Session's order.
_SESSION_COLUMNS = ", ".join(TABLES["sessions"].columns)


def _session_of(row: tuple[Any, ...]) -> Session:
    *head, pinned, archived, hidden, metadata, parent_relation = row
    return Session(*head, bool(pinned), bool(archived), bool(hidden), json.loads(metadata), parent_relation)

T = TypeVar("T")

STATES = ("idle", "running", "resume_pending", "ended")
_FIELDS = ("session_id", "profile", "state", "turn_started_at", "updated_at")


def _route(row: tuple[Any, ...] | None) -> Route | None:
    return None if row is None else Route(*row)


_SELECT = "SELECT key, session_id, profile, state, turn_started_at, updated_at FROM gateway_routes"


def _get(conn: apsw.Connection, key: str) -> Route | None:
    return _route(conn.execute(f"{_SELECT} WHERE key = ?", (key,)).fetchone())


def _put(conn: apsw.Connection, route: Route) -> Route:
    conn.execute(
        "INSERT INTO gateway_routes(key, session_id, profile, state, turn_started_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET session_id = excluded.session_id, "
        "profile = excluded.profile, state = excluded.state, turn_started_at = excluded.turn_started_at, "
        "updated_at = excluded.updated_at",
        (route.key, route.session_id, route.profile, route.state, route.turn_started_at, route.updated_at),
    )
    return route


def _update(conn: apsw.Connection, key: str, changes: dict[str, Any], expect: dict[str, Any]) -> Route | None:
    current = _get(conn, key)
    if current is None:
        return None
    if any(getattr(current, name) != value for name, value in expect.items()):
        return None  # changed since the caller read it: a live entry is never overwritten
    sets = ", ".join(f"{name} = ?" for name in changes)
    conn.execute(f"UPDATE gateway_routes SET {sets} WHERE key = ?", (*changes.values(), key))
    return _get(conn, key)


def _entries(conn: apsw.Connection, profile: str | None, states: tuple[str, ...] | None) -> list[Route]:
    where, params = [], []
    if profile is not None:
        where.append("profile = ?")
        params.append(profile)
    if states:
        where.append(f"state IN ({', '.join('?' * len(states))})")
        params.extend(states)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    return [Route(*row) for row in conn.execute(f"{_SELECT}{clause} ORDER BY key", params)]


def _live_by_key(conn: apsw.Connection, key: str) -> Session | None:
    row = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE session_key = ? AND ended_at IS NULL "
        "ORDER BY coalesce(last_activity_at, started_at) DESC, id DESC LIMIT 1",
        (key,),
    ).fetchone()
    return None if row is None else _session_of(row)


def _legacy_by_peer(conn: apsw.Connection, platform: str, chat_type: str, chat_id: str,
                    thread: str | None, owner: str | None) -> Session | None:
    # Only rows of the store's owner are adopted (S-36): a DM's chat id is the same for
    # every bot, so another profile's row with the same peer tuple is not ours.
    owner_clause = "profile IS NULL OR profile = 'main'" if owner is None else "profile = ?"
    params: list[Any] = [platform, chat_type, chat_id, thread or ""]
    if owner is not None:
        params.append(owner)
    row = conn.execute(
        f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE source = ? AND chat_type = ? AND chat_id = ? "
        f"AND coalesce(thread_id, '') = ? AND session_key IS NULL AND ended_at IS NULL AND ({owner_clause}) "
        "ORDER BY coalesce(last_activity_at, started_at) DESC, id DESC LIMIT 1",
        params,
    ).fetchone()
    return None if row is None else _session_of(row)


class RoutingTable:
    """The routing index and gateway lookups of one store, run on its writer and readers.

    Promises as documented by RoutingIndex in store/contract.py.
    """

    def __init__(self, write: Callable[[Callable[[apsw.Connection], T]], T],
                 read: Callable[[Callable[[apsw.Connection], T]], T], owner: str | None) -> None:
        self._write = write
        self._read = read
        self._owner = owner

    def get(self, key: str) -> Route | None:
        return self._read(partial(_get, key=_text(key, "key")))

    def put(self, key: str, session_id: str, profile: str) -> Route:
        """Insert or rewrite the entry for `key` (a new session serves it, its turn idle)."""
        route = Route(_text(key, "key"), _text(session_id, "session_id"), _text(profile, "profile"),
                      "idle", None, time.time())
        return self._write(partial(_put, route=route))

    def update(self, key: str, *, expect: Mapping[str, Any] | None = None, **changes: Any) -> Route | None:
        """Change the named fields of one entry; None if it is absent or differs from `expect`."""
        unknown = (set(changes) | set(expect or {})) - set(_FIELDS)
        if unknown:
            raise InvalidInput(f"unknown routing field(s): {', '.join(sorted(unknown))}")
        if "state" in changes:
            _state(changes["state"])
        changes.setdefault("updated_at", time.time())
        return self._write(partial(_update, key=_text(key, "key"), changes=changes, expect=dict(expect or {})))

    def entries(self, *, profile: str | None = None, states: tuple[str, ...] | None = None) -> list[Route]:
        return self._read(partial(_entries, profile=profile, states=states))

    def live_by_key(self, key: str) -> Session | None:
        """The most recently active open session of this store whose session_key is `key`."""
        return self._read(partial(_live_by_key, key=_text(key, "key")))

    def legacy_by_peer(self, platform: str, chat_type: str, chat_id: str, thread: str | None = None) -> Session | None:
        """An open, unkeyed session of this store's owner for the peer tuple, or None (S-36)."""
        return self._read(partial(_legacy_by_peer, platform=platform, chat_type=chat_type, chat_id=chat_id,
                                  thread=thread, owner=self._owner))


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be non-empty text")
    return value


def _state(value: Any) -> str:
    if value not in STATES:
        raise InvalidInput(f"a routing state is one of {', '.join(STATES)} (got {value!r})")
    return value
