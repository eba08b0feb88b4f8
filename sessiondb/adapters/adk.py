"""sessiondb as the session and memory services of Google ADK (docs/adapters/adk.md).

    runner = Runner(app_name="travel", agent=agent,
                    session_service=SessiondbSessionService("agents.db"),
                    memory_service=SessiondbMemoryService("agents.db"))

An ADK session is a sessiondb session of source "adk" (under the same id, or a derived
one when another session holds it: sessiondb.adapters.adk_store), the ADK user as its
user_id and the app's name in its metadata; each event is one message
(sessiondb.adapters.adk_events), each state scope one session's metadata
(sessiondb.adapters.adk_state); the memory service is sessiondb.adapters.adk_memory.
Every method runs the blocking store on a worker thread, so the event loop never waits
on the disk or the server.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any, Callable, Mapping, TypeVar

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig, ListSessionsResponse
from google.adk.sessions.session import Session
from typing_extensions import override

from ..errors import MessageConflict, NotFound, SessionExists
from ..inputs import storable_label
from ..model import COMPRESSION, Message
from ..model import Session as StoredSession
from ..store.aio import AsyncStore
from ..store.contract import Store
from . import adk_state as state
from .adk_events import event_of, message_of
from .adk_memory import SessiondbMemoryService
from .adk_store import SOURCE, OnStore, adk_id, belongs

__all__ = ["SessiondbMemoryService", "SessiondbSessionService"]

#: How many of a session's newest messages an append looks through for its own event (a
#: retry of an event whose first delivery was stored is a re-delivery, never stale).
_RECENT = 20
_PAGE = 500
#: Writes of an event with shared state, each after creating the state sessions it found
#: missing, before a state session deleted every time in between is let fail the append.
_HOME_ATTEMPTS = 3
T = TypeVar("T")

_STALE = ("The session has been modified in storage since it was loaded. "
          "Please reload the session before appending more events.")


class SessiondbSessionService(OnStore, BaseSessionService):
    """ADK sessions, events and state in a sessiondb store, on any backend.

    Give `store=` (an open Store or AsyncStore, left open) or where to open one (a path or
    URL, `home=`, `profile=`...), which the service owns and closes. `check_stale`
    (default True) refuses, as the SDK's database service does, an append from a session
    object that missed events another writer stored since it was read (StaleSessionError:
    reload it with get_session). With False, several runs may write one session at once:
    every event is kept once, in commit order.

    `last_update_time` is the timestamp of the session's last event (its creation time
    while it has none), as in the SDK's own services.
    """

    def __init__(self, location: str | os.PathLike[str] | None = None, *, store: Store | AsyncStore | None = None,
                 check_stale: bool = True, **open_options: Any) -> None:
        super().__init__(location, store, open_options)
        self._check_stale = check_stale

    # --- sessions ----------------------------------------------------------------------

    @override
    async def create_session(self, *, app_name: str, user_id: str, state: dict[str, Any] | None = None,
                             session_id: str | None = None) -> Session:
        return await self._off_loop(self._create, app_name, user_id, state, session_id)

    def _create(self, app_name: str, user_id: str, initial: dict[str, Any] | None, session_id: str | None) -> Session:
        scopes = state.split(initial)
        try:
            stored = self._claim(app_name, user_id, session_id or None, state.as_metadata(scopes["session"]))
        except SessionExists:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.") from None
        shared = state.patches(scopes, app_name, user_id)
        if shared:  # the initial app and user state, after the claim, in one unit of work
            self._with_homes(stored.id, adk_id(stored), app_name, user_id, shared,
                             partial(self._store.extend, stored.id, _nothing, newest=0, metadata_of=shared))
        return self._session_of(stored, [], newest=None, marker="")

    @override
    async def get_session(self, *, app_name: str, user_id: str, session_id: str,
                          config: GetSessionConfig | None = None) -> Session | None:
        return await self._off_loop(self._get, app_name, user_id, session_id, config)

    def _get(self, app_name: str, user_id: str, session_id: str, config: GetSessionConfig | None) -> Session | None:
        # The session and the app's and user's state in one read, then its messages in another.
        found = self._store.get_sessions([*self._candidates(app_name, user_id, session_id),
                                          *state.homes(app_name, user_id)])
        stored = self._conversation(app_name, user_id, session_id, found)
        if stored is None:
            return None
        config = config or GetSessionConfig()
        # The newest messages wherever a rotation moved the conversation: its newest for the
        # session's revision, and the first page of its events.
        page = self._newest(stored.id, 1 if config.num_recent_events == 0 else _PAGE)
        events: list[Event] = []
        if config.num_recent_events != 0:
            events = self._recent_events(page, config.num_recent_events, config.after_timestamp)
        return self._session_of(stored, events, newest=page[0] if page else None, marker=page[0].uid if page else "",
                                scopes=state.of_homes(found, app_name, user_id))

    def _recent_events(self, page: list[Message], wanted: int | None, after: float | None) -> list[Event]:
        """The newest `wanted` events (all when None) stamped at `after` or later, oldest first,
        read on from `page`, the conversation's newest _PAGE messages (newest first)."""
        newest_first: list[Event] = []
        while True:
            for message in page:
                event = event_of(message)
                if after is None or event.timestamp >= after:
                    newest_first.append(event)
                    if wanted is not None and len(newest_first) == wanted:
                        return newest_first[::-1]
            if len(page) < _PAGE:
                return newest_first[::-1]
            page = self._store.transcript(page[-1].session_id, order="desc", limit=_PAGE, before=page[-1].id)

    def _session_of(self, stored: StoredSession, events: list[Event], *, newest: Message | None,
                    marker: str | None, scopes: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Session:
        """The ADK session of a stored one (`newest`: its newest message, None when it has
        none), its state merged with the app's and the user's (`scopes`, read here in one
        call unless the caller read them)."""
        app_name, user_id = stored.metadata[state.APP_KEY], stored.user_id or ""
        if scopes is None:
            scopes = state.of_homes(self._store.get_sessions(state.homes(app_name, user_id)), app_name, user_id)
        app_state, user_state = scopes
        session = Session(id=adk_id(stored), app_name=app_name, user_id=user_id,
                          state=state.merged(state.of_metadata(stored.metadata), app_state, user_state),
                          events=events, last_update_time=newest.timestamp if newest else stored.started_at)
        session._storage_update_marker = marker  # the newest stored message's uid: the stale check's revision
        return session

    @override
    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> ListSessionsResponse:
        return await self._off_loop(self._list, app_name, user_id)

    def _list(self, app_name: str, user_id: str | None) -> ListSessionsResponse:
        if user_id and not storable_label(user_id):  # no session can be stored under it: it has none
            return ListSessionsResponse(sessions=[])
        scopes: dict[str, dict[str, Any]] = {}  # a state session's id -> its state, each read once
        sessions, cursor = [], None
        while True:  # the user's sessions only, when one is named: the store reads nobody else's
            page = self._store.list_sessions(source=SOURCE, user_id=user_id or None, include_archived=True,
                                             include_hidden=True, limit=_PAGE, cursor=cursor)
            listed = [stored for stored in page.items  # not another app's or user's, nor a rotation's continuation
                      if belongs(stored, app_name, user_id) and stored.parent_relation != COMPRESSION]
            unread = {home for stored in listed for home in state.homes(app_name, stored.user_id or "")} - set(scopes)
            if unread:  # every state this page needs, in one read
                found = self._store.get_sessions(sorted(unread))
                scopes.update((home, state.scope_in(found, home)) for home in unread)
            for stored in listed:
                app, user = state.homes(app_name, stored.user_id or "")
                newest = self._newest(stored.id)
                sessions.append(self._session_of(stored, [], newest=newest[0] if newest else None, marker=None,
                                                 scopes=(scopes[app], scopes[user])))
            if page.cursor is None:
                break
            cursor = page.cursor
        # The base class's order: by last update, oldest first (ties as the SDK's in-memory service breaks them).
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        await self._off_loop(self._delete, app_name, user_id, session_id)

    def _delete(self, app_name: str, user_id: str, session_id: str) -> None:
        stored = self._conversation(app_name, user_id, session_id)
        if stored is None:
            return
        try:  # with the sessions compactions rotated it into, in one unit of work
            self._store.delete_session(stored.id, conversation=True)
        except NotFound:  # deleted by another writer meanwhile
            pass

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._off_loop(state.read, self._store, app_name, user_id)

    # --- events ------------------------------------------------------------------------

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)  # temp: keys live in memory for this invocation only
        event = self._trim_temp_delta_state(event)
        if any(e.id == event.id and e == event for e in session.events):
            return event  # this very session already holds it: a retried call
        message = message_of(event)  # serialised first: an event that cannot be stored writes nothing
        scopes = state.split(event.actions.state_delta if event.actions else None)
        await self._off_loop(self._append, session, event, message, scopes)
        session._storage_update_marker = event.id
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    def _append(self, session: Session, event: Event, message: dict[str, Any],
                scopes: dict[str, dict[str, Any]]) -> None:
        def store(candidate: StoredSession, newest: list[Message], _history: Any) -> list[dict[str, Any]]:
            if not self._holds(candidate, session.app_name, session.user_id, session.id):
                raise NotFound(candidate.id)
            # The check and the write are one unit of work, the conversation's end locked:
            # of two writers from stale copies, in any processes, exactly one is stored.
            return _unless_stale(newest, session, event, message) if self._check_stale else [message]

        own = state.as_metadata(scopes["session"]) if scopes["session"] else None
        shared = state.patches(scopes, session.app_name, session.user_id)
        for candidate in self._candidates(session.app_name, session.user_id, session.id):
            try:  # one store call: the conversation found, checked and written, with the whole state delta
                self._with_homes(candidate, session.id, session.app_name, session.user_id, shared, partial(
                    self._store.extend, candidate, store, newest=_RECENT if self._check_stale else 0, metadata=own,
                    metadata_of=shared))
                break
            except NotFound:
                continue
            except MessageConflict:
                raise AlreadyExistsError(f"Event {event.id} already exists with other content.") from None
        else:
            raise SessionNotFoundError(f"Session {session.id} not found.")

    def _with_homes(self, conversation: str, session_id: str, app_name: str, user_id: str,
                    shared: Mapping[str, Any], write: Callable[[], T]) -> T:
        """`write`, which writes the stored session `conversation` (ADK session `session_id`
        of this app and user) and patches the state sessions `shared` names. On NotFound,
        when the conversation is stored and a state session is not (its first write, or
        deleted meanwhile), that one is created and `write` runs again; NotFound, nothing
        created, when the conversation itself is not stored (a refused append never makes
        state sessions: for a forgotten user they would be made again)."""
        for _ in range(_HOME_ATTEMPTS):
            try:
                return write()
            except NotFound:
                if not shared:
                    raise
            found = self._store.get_sessions([conversation, *shared])
            stored = found.get(conversation)
            if stored is None or not self._holds(stored, app_name, user_id, session_id):
                raise NotFound(f"session {conversation} is not stored")
            state.create(self._store, [home for home in shared if home not in found], app_name, user_id)
        return write()


def _nothing(*_end: Any) -> list[dict[str, Any]]:
    """A build that appends nothing: an extend that only merges state."""
    return []


def _unless_stale(newest: list[Message], session: Session, event: Event,
                  message: dict[str, Any]) -> list[dict[str, Any]]:
    """The event's message to store after the conversation's `newest` messages (oldest
    first), or StaleSessionError when they hold events this session object never saw.

    The session's revision is the uid of the newest message it saw stored (set by every
    read and append of this service; for a session built elsewhere, its last event). An
    event among the newest already is a re-delivery: its message is given again, and the
    store keeps it once (by uid).
    """
    marker = session._storage_update_marker
    if marker is None:
        marker = session.events[-1].id if session.events else ""
    recent = [m.uid for m in newest]
    if event.id not in recent and (recent[-1] if recent else "") != marker:
        raise StaleSessionError(_STALE)
    return [message]
