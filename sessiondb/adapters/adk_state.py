"""Where ADK state lives in a sessiondb store, scope by scope.

ADK state keys carry their scope: `app:` is shared by every session of the app, `user:`
by the user's sessions of the app, `temp:` lives only for one invocation and is never
stored; any other key belongs to the session. Each scope is kept in the metadata of one
sessiondb session:

- session state in the conversation's own session;
- app state in a hidden state session per app, user state in one per (app, user), with
  source "adk-state" and an id derived from the names (a digest: app names and user ids
  may hold characters a session id may not).

Each key is one top-level metadata entry, `state:<key>`, holding `[value]` (a list, so
that a state value of None is stored, not read as "remove the key"). `update_metadata`
merges a patch into the stored metadata in one write unit on every backend, so deltas
from several processes to the same scope all land: two writers of different keys both
keep theirs, two writers of one key leave the later write, as the SDK's own services do.
An event's app and user keys are merged in the same unit of work as the event is stored
(`patches`, extend's `metadata_of`): an event lands with its whole state delta or not at all.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping

from google.adk.sessions.state import State
from pydantic_core import to_jsonable_python

from ..errors import InvalidInput, SessionExists
from ..model import Session as StoredSession
from ..store.contract import Store

#: The source of the sessions that hold app and user state.
STATE_SOURCE = "adk-state"
#: The metadata key that names a session's ADK app (conversations and state sessions alike).
APP_KEY = "app_name"
_ENTRY = "state:"


def split(state: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The stored scopes of a state or a delta ('app', 'user', 'session'), as JSON; temp: is dropped."""
    scopes: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for key, value in (state or {}).items():
        if key.startswith(State.TEMP_PREFIX):
            continue
        try:
            value = to_jsonable_python(value)
        except Exception as exc:  # pydantic raises its own serialisation errors
            raise InvalidInput(f"state key {key!r}: its value cannot be stored as JSON ({exc})") from None
        if key.startswith(State.APP_PREFIX):
            scopes["app"][key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            scopes["user"][key.removeprefix(State.USER_PREFIX)] = value
        else:
            scopes["session"][key] = value
    return scopes


def as_metadata(scope: Mapping[str, Any]) -> dict[str, Any]:
    """The metadata patch that stores one scope's keys."""
    return {_ENTRY + key: [value] for key, value in scope.items()}


def of_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """One scope's keys, read back from the metadata that stores them."""
    return {key.removeprefix(_ENTRY): value[0] for key, value in metadata.items()
            if key.startswith(_ENTRY) and isinstance(value, list) and len(value) == 1}


def home_of(app_name: str, user_id: str | None = None) -> str:
    """The id of the state session of an app (user_id None) or of one user of it."""
    digest = hashlib.sha256(json.dumps([app_name, user_id]).encode()).hexdigest()[:32]
    return f"adk-{'app' if user_id is None else 'user'}-state-{digest}"


def homes(app_name: str, user_id: str) -> tuple[str, str]:
    """The ids of the state sessions of an app and of one user of it."""
    return home_of(app_name), home_of(app_name, user_id)


def of_homes(found: Mapping[str, StoredSession], app_name: str,
             user_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The app's and the user's stored state among sessions read by id (`homes` among them)."""
    app, user = homes(app_name, user_id)
    return scope_in(found, app), scope_in(found, user)


def read(store: Store, app_name: str, user_id: str | None = None) -> dict[str, Any]:
    """The app's (or the user's) stored state; empty when none was ever written."""
    home = home_of(app_name, user_id)
    return scope_in(store.get_sessions([home]), home)


def scope_in(found: Mapping[str, StoredSession], home: str) -> dict[str, Any]:
    """The state stored by the state session `home` among sessions read by id (empty when absent)."""
    return of_metadata(found[home].metadata) if home in found else {}


def patches(scopes: Mapping[str, Mapping[str, Any]], app_name: str, user_id: str) -> dict[str, dict[str, Any]]:
    """The metadata patches that store a delta's app and user keys (`split`'s scopes), by
    the id of the state session each goes to: extend's `metadata_of`, so that they land
    with the event that carries them."""
    found = {}
    if scopes["app"]:
        found[home_of(app_name)] = as_metadata(scopes["app"])
    if scopes["user"]:
        found[home_of(app_name, user_id)] = as_metadata(scopes["user"])
    return found


def create(store: Store, homes: Iterable[str], app_name: str, user_id: str) -> None:
    """Create `homes`, state sessions of the app and of one user of it (one another process
    created meanwhile is left as it is), each hidden as it is created: a home, not a
    conversation, is never listed."""
    for home in homes:
        try:
            store.create_session(STATE_SOURCE, session_id=home, user_id=None if home == home_of(app_name) else user_id,
                                 metadata={APP_KEY: app_name}, hidden=True)
        except SessionExists:  # another process created it first
            continue


def merged(session_state: Mapping[str, Any], app_state: Mapping[str, Any],
           user_state: Mapping[str, Any]) -> dict[str, Any]:
    """The state an ADK session shows: its own keys, then app: and user: ones."""
    return {**session_state,
            **{State.APP_PREFIX + k: v for k, v in app_state.items()},
            **{State.USER_PREFIX + k: v for k, v in user_state.items()}}
