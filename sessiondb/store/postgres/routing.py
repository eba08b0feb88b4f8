"""The gateway's routing index (S-32) in the profile's schema, and the lookups by key and peer.

The promises are RoutingIndex's (store/contract.py): single-entry writes that never touch
a session row, conditional updates (`expect`) so recovery never overwrites a live entry,
and lookups of open sessions by key or by an unkeyed peer tuple of the store's owner.
A conditional update is one statement (`UPDATE ... WHERE key = ... AND field = ...`), so
two gateways racing on one key cannot both win.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from collections.abc import Mapping
from typing import Any, Callable

import psycopg
from psycopg import sql

from ...errors import InvalidInput
from ...model import Route, Session
from ..rows import TABLES

#: The session columns a lookup reads, in Session's order.
_SESSION_COLUMNS = ", ".join(TABLES["sessions"].columns)


def _session_of(row: tuple[Any, ...]) -> Session:
    *head, pinned, archived, hidden, metadata, parent_relation = row
    return Session(*head, bool(pinned), bool(archived), bool(hidden), json.loads(metadata), parent_relation)

Run = Callable[..., Any]

STATES = ("idle", "running", "resume_pending", "ended")
FIELDS = ("session_id", "profile", "state", "turn_started_at", "updated_at")
_SELECT = "SELECT key, session_id, profile, state, turn_started_at, updated_at FROM gateway_routes"


def _one(conn: psycopg.Connection, query: Any, params: Any) -> Route | None:
    row = conn.execute(query, params).fetchone()
    return None if row is None else Route(*row)


def _put(conn: psycopg.Connection, route: Route) -> Route:
    conn.execute(
        "INSERT INTO gateway_routes(key, session_id, profile, state, turn_started_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, "
        "profile = excluded.profile, state = excluded.state, turn_started_at = excluded.turn_started_at, "
        "updated_at = excluded.updated_at", tuple(asdict(route).values()))
    return route


def _update(conn: psycopg.Connection, key: str, changes: dict[str, Any], expect: dict[str, Any]) -> Route | None:
    # Field names come from FIELDS (checked by the caller), values are bound.
    sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(n)) for n in changes)
    conditions = [sql.SQL("key = %s")] + [sql.SQL("{} IS NOT DISTINCT FROM %s").format(sql.Identifier(n))
                                          for n in expect]
    statement = sql.SQL("UPDATE gateway_routes SET {} WHERE {} RETURNING key, session_id, profile, state, "
                        "turn_started_at, updated_at").format(sets, sql.SQL(" AND ").join(conditions))
    return _one(conn, statement, (*changes.values(), key, *expect.values()))


def _entries(conn: psycopg.Connection, profile: str | None, states: tuple[str, ...] | None) -> list[Route]:
    rows = conn.execute(f"{_SELECT} WHERE (%(p)s::text IS NULL OR profile = %(p)s) "
                        "AND (%(s)s::text[] IS NULL OR state = ANY(%(s)s)) ORDER BY key",
                        {"p": profile, "s": list(states) if states else None})
    return [Route(*row) for row in rows]


def _session(conn: psycopg.Connection, where: str, params: dict[str, Any]) -> Session | None:
    row = conn.execute(f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE {where} AND ended_at IS NULL "
                       "ORDER BY coalesce(last_activity_at, started_at) DESC, id DESC LIMIT 1", params).fetchone()
    return None if row is None else _session_of(row)


class RoutingTable:
    """RoutingIndex (store/contract.py) over one schema; `run(work, read_only=...)` runs a
    unit of work as the backend does."""

    def __init__(self, run: Run, owner: str | None) -> None:
        self._run = run
        self._owner = owner

    def get(self, key: str) -> Route | None:
        key = _text(key, "key")
        return self._run(lambda conn: _one(conn, f"{_SELECT} WHERE key = %s", (key,)), read_only=True)

    def put(self, key: str, session_id: str, profile: str) -> Route:
        route = Route(_text(key, "key"), _text(session_id, "session_id"), _text(profile, "profile"),
                      "idle", None, time.time())
        return self._run(lambda conn: _put(conn, route))

    def update(self, key: str, *, expect: Mapping[str, Any] | None = None, **changes: Any) -> Route | None:
        unknown = (set(changes) | set(expect or {})) - set(FIELDS)
        if unknown:
            raise InvalidInput(f"unknown routing field(s): {', '.join(sorted(unknown))}")
        if "state" in changes and changes["state"] not in STATES:
            raise InvalidInput(f"a routing state is one of {', '.join(STATES)} (got {changes['state']!r})")
        key, expected = _text(key, "key"), dict(expect or {})
        changes.setdefault("updated_at", time.time())
        return self._run(lambda conn: _update(conn, key, changes, expected))

    def entries(self, *, profile: str | None = None, states: tuple[str, ...] | None = None) -> list[Route]:
        return self._run(lambda conn: _entries(conn, profile, states), read_only=True)

    def live_by_key(self, key: str) -> Session | None:
        key = _text(key, "key")
        return self._run(lambda conn: _session(conn, "session_key = %(k)s", {"k": key}), read_only=True)

    def legacy_by_peer(self, platform: str, chat_type: str, chat_id: str, thread: str | None = None) -> Session | None:
        # Only rows of the store's owner are adopted (S-36): a DM's chat id is the same for every bot.
        owner = "(profile IS NULL OR profile = 'main')" if self._owner is None else "profile = %(owner)s"
        where = ("source = %(platform)s AND chat_type = %(chat_type)s AND chat_id = %(chat_id)s "
                 f"AND coalesce(thread_id, '') = %(thread)s AND session_key IS NULL AND {owner}")
        params = {"platform": platform, "chat_type": chat_type, "chat_id": chat_id, "thread": thread or "",
                  "owner": self._owner}
        return self._run(lambda conn: _session(conn, where, params), read_only=True)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} must be non-empty text")
    return value
