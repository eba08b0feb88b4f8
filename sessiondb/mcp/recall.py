"""What the recall server's tools do, as plain calls on a store (server.py exposes them over MCP).

Results are small JSON-ready dicts an agent can read: times as ISO 8601 in UTC, every
large field cut to a readable length with a marker saying how much was cut and where the
whole is (`cut`), sessions with their source tool and project. Search
finds compacted messages too (an agent needs most what was compacted out of its
context) and says which hits were compacted.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timezone
from typing import Any

from ..errors import InvalidInput, NotFound, SessionExists
from ..inputs import check_label
from ..model import Message, Session
from ..store.contract import Store
from ..titles import first_words

TOOL_TEXT = 4000  # characters of a tool message's output returned
TEXT = 16_000  # characters of any other message's text returned
FIELD = 4000  # characters of a reasoning or of one tool call's arguments returned
LABEL = 1000  # characters of a session's title, project or original id returned
TOOL_CALLS = 50  # tool calls of one message returned
MAX_SCAN = 1000  # hits or sessions looked at to apply a project filter
MAX_READ = 500  # messages one transcript call returns at most


def moment(value: str | float | None, what: str) -> float | None:
    """Seconds since the epoch from an ISO 8601 date or date-time (UTC unless it says) or a number."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{what} must be an ISO 8601 date or date-time like 2026-11-20 or "
                           f"2026-11-20T09:00:00Z, not {value!r}") from None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def cut(value: Any, limit: int, session_id: str) -> Any:
    """`value` (text) cut to `limit` characters, saying how many more there are and how to
    read them whole; anything else as it is."""
    if not isinstance(value, str) or len(value) <= limit:
        return value
    return (value[:limit] + f"… [cut: {len(value) - limit:,} more characters; "
            f"`sessiondb sessions transcript {session_id} --json` prints them whole]")


def session_view(s: Session, first_words: str | None = None) -> dict[str, Any]:
    """A session as the tools show it; an untitled one is called by `first_words` (titles.first_words)."""
    meta = s.metadata or {}
    return {"id": s.id, "title": cut(s.title or meta.get("title") or first_words, LABEL, s.id),
            "source": s.source, "project": cut(meta.get("project"), LABEL, s.id),
            "original_id": cut(meta.get("original_id"), LABEL, s.id), "started_at": iso(s.started_at),
            "last_active_at": iso(s.last_activity_at), "messages": s.message_count,
            "parent_session_id": s.parent_session_id}


def message_view(m: Message) -> dict[str, Any]:
    view: dict[str, Any] = {"message_id": m.id, "role": m.role, "time": iso(m.timestamp),
                            "text": cut(m.text, TOOL_TEXT if m.role == "tool" else TEXT, m.session_id)}
    if m.tool_calls:
        calls = [c if isinstance(c, dict) else {} for c in m.tool_calls[:TOOL_CALLS]]
        view["tool_calls"] = [{"id": c.get("id"), "name": (c.get("function") or {}).get("name"),
                               "arguments": cut((c.get("function") or {}).get("arguments"), FIELD, m.session_id)}
                              for c in calls]
        if len(m.tool_calls) > TOOL_CALLS:
            view["tool_calls_cut"] = (f"{len(m.tool_calls) - TOOL_CALLS:,} more tool calls; "
                                      f"`sessiondb sessions transcript {m.session_id} --json` prints them")
    for name in ("tool_call_id", "tool_name", "reasoning", "display_kind"):
        if getattr(m, name):
            view[name] = cut(getattr(m, name), FIELD, m.session_id)
    if m.state != "active":
        view["state"] = m.state
    return view


class Recall:
    """`allow_system`: whether `append` takes system messages, which a resumed session
    replays to its model as instructions (an agent could otherwise plant some).

    `user_id`: every tool reads and writes that person's sessions alone (an agent serving one
    user cannot read another's, even by id): searches, recalls and listings are scoped to
    them, a session is named by its exact id and must be theirs (another's is "not found",
    as one that does not exist), new sessions are theirs, and forget erases theirs only."""

    def __init__(self, store: Store, *, allow_system: bool = False, user_id: str | None = None) -> None:
        self.store = store
        self.allow_system = allow_system
        self.user_id = check_label(user_id, "user_id")
        self._sessions: dict[str, Session] = {}
        self._words: dict[str, str | None] = {}  # an untitled session's first words, by id

    def _session(self, session_id: str) -> Session:
        if session_id not in self._sessions:
            self._sessions[session_id] = self.store.get_session(session_id)
        return self._sessions[session_id]

    def _view(self, session: Session) -> dict[str, Any]:
        """session_view, reading the first words of a session that has no title (once per call)."""
        if session.title or (session.metadata or {}).get("title"):
            return session_view(session)
        if session.id not in self._words:
            self._words[session.id] = first_words(self.store, session.id)
        return session_view(session, self._words[session.id])

    def _in_project(self, session: Session, project: str | None) -> bool:
        if not project:
            return True
        meta = session.metadata or {}
        return any(project in str(meta.get(k) or "") for k in ("project", "cwd"))

    def search(self, query: str, *, source: str | None = None, project: str | None = None, since: Any = None,
               until: Any = None, role: str | None = None, include_tools: bool = False, limit: int = 20,
               include_reasoning: bool = False) -> list[dict]:
        self._sessions.clear()  # sessions change between calls; within one, look each up once
        self._words.clear()
        hits = self.store.search(query, source=source or None, user_id=self.user_id, role=role or None,
                                 since=moment(since, "since"),
                                 until=moment(until, "until"), include_tools=include_tools,
                                 include_reasoning=include_reasoning, limit=MAX_SCAN if project else limit)
        return self._views(hits, project, limit)

    def _views(self, hits: list, project: str | None, limit: int) -> list[dict]:
        """The hits in `project` (all without one) as the tools show them, at most `limit`."""
        found = []
        for hit in hits:
            session = self._session(hit.session_id)
            if not self._in_project(session, project):
                continue
            view = self._view(session)
            found.append({"session_id": hit.session_id, "message_id": hit.message_id, "role": hit.role,
                          "time": iso(hit.timestamp), "snippet": hit.snippet, "compacted": hit.compacted,
                          "session_title": view["title"], "source": hit.session_source, "project": view["project"]})
            if len(found) >= limit:
                break
        return found

    def recall(self, question: str, *, source: str | None = None, project: str | None = None, since: Any = None,
               until: Any = None, limit: int = 10) -> dict[str, Any]:
        """The hits of store.recall as search returns them, under `hits`, with a `note` in
        words: how many were found, or that nothing was (a model reads text, not an empty list)."""
        self._sessions.clear()
        self._words.clear()
        hits = self.store.recall(question, source=source or None, user_id=self.user_id, since=moment(since, "since"),
                                 until=moment(until, "until"), limit=MAX_SCAN if project else limit)
        found = self._views(hits, project, limit)
        if not found:
            note = ("Nothing stored matches this question. Try other words (a name, a place, a distinctive term), "
                    "or list_sessions to browse.")
        else:
            how = "words (stemmed, any of them)"
            if any(hit.found_by != "words" for hit in hits):
                how = "words (stemmed, any of them) and its meaning"
            note = (f"{len(found)} message(s), best first, found by the question's {how}; "
                    "transcript with a hit's session_id and message_id reads around it.")
        return {"note": note, "hits": found}

    def read(self, session: str, *, around: int | None = None, context: int = 5, limit: int = 100,
             include_compacted: bool = True, tip: bool = False) -> dict[str, Any]:
        for value, name in ((limit, "limit"), (context, "context")):
            if isinstance(value, int) and value > MAX_READ:
                raise InvalidInput(f"{name} is {value:,}; one read returns at most {MAX_READ} messages: "
                                   "read on from the last message_id with around_message_id")
        self._words.clear()
        found = self._find(session)
        if tip:
            found = self.store.tip(found.id)  # then read as a session of its own: the two reads around agree
        if around is None:
            messages = self.store.transcript(found.id, include_compacted=include_compacted, limit=limit)
        else:
            before = self.store.transcript(found.id, include_compacted=True, before=around + 1, order="desc",
                                           limit=context + 1)
            after = self.store.transcript(found.id, include_compacted=True, after=around, limit=context)
            messages = before[::-1] + after
            if not any(m.id == around for m in before):
                raise InvalidInput(f"message {around} is not in session {found.id}")
        return {"session": self._view(found), "messages": [message_view(m) for m in messages]}

    def list(self, *, source: str | None = None, project: str | None = None, since: Any = None,
             until: Any = None, limit: int = 50) -> list[dict]:
        page = self.store.list_sessions(source=source or None, user_id=self.user_id, since=moment(since, "since"),
                                        until=moment(until, "until"), limit=MAX_SCAN if project else limit)
        self._words.clear()
        return [self._view(s) for s in page.items if self._in_project(s, project)][:limit]

    def append(self, session: str | None, role: str, content: str, *, uid: str | None = None,
               title: str | None = None) -> dict[str, Any]:
        if role == "system" and not self.allow_system:
            raise InvalidInput("system messages are refused here: a resumed session replays them to its model "
                               "as instructions; start the server with --allow-system to take them")
        if session:
            target, created = self._find(session), False
        else:
            target, created = self._new_session(uid, title)
        try:
            (stored,) = self.store.append(target.id, [{"uid": uid, "role": role, "content": content}])
        except InvalidInput:
            if created:  # a refused message leaves no empty session behind
                self.store.delete_session(target.id)
            raise
        return {"session_id": target.id, **message_view(stored)}

    def forget(self, *, user_id: str | None = None, session_id: str | None = None, source: str | None = None,
               before: Any = None, dry_run: bool = False) -> dict[str, Any]:
        """store.forget's receipt; a session named as `read` names one (id, unique prefix or title).
        Scoped to a user, only theirs: another user named is refused."""
        if self.user_id is not None and user_id and user_id != self.user_id:
            raise InvalidInput(f"this server forgets user {self.user_id}'s conversations only")
        session = self._find(session_id).id if session_id else None
        return self.store.forget(user_id=self.user_id or user_id or None, session_id=session, source=source or None,
                                 before=moment(before, "before"), dry_run=dry_run).to_dict()

    def _find(self, ref: str) -> Session:
        """The session `ref` names: an id, a unique id prefix or a title; scoped to a user, an
        exact id of one of theirs (a prefix or a title could name, or list, another's)."""
        if self.user_id is None:
            return self.store.find_session(ref)
        try:
            found = self.store.get_session(ref)
        except NotFound:
            found = None
        if found is None or found.user_id != self.user_id:
            raise NotFound(f"user {self.user_id} has no session {ref!r}: name one by its exact id "
                           "(search, recall and list_sessions give them)")
        return found

    def _new_session(self, uid: str | None, title: str | None) -> tuple[Session, bool]:
        """The new session a message without a session goes to, and whether this call made it.
        Given a uid, it is named after the uid, so a repeated call finds the session (and the
        message) the first one made."""
        if uid is None:
            return self.store.create_session("mcp", title=title, user_id=self.user_id), True
        if not isinstance(uid, str):
            raise InvalidInput(f"uid must be text, not {type(uid).__name__}")
        named = uid if self.user_id is None else f"{self.user_id}\x00{uid}"  # one user's uid is not another's
        session_id = "mcp-" + hashlib.sha256(named.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        try:
            return self.store.create_session("mcp", session_id=session_id, title=title, user_id=self.user_id), True
        except SessionExists:
            return self.store.get_session(session_id), False
