"""Sessions and their messages: the routes of store.list_sessions, create_session,
get_session, set_title/set_flags, delete_session, transcript, append, lineage, usage and
export (streamed, never capped).

Bodies are read by `parsed` rather than by FastAPI, so that a large one (an append can
be megabytes) is parsed and validated on a worker thread instead of the event loop; the
body's schema is declared to OpenAPI by `body_schema`.
"""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import closing
from typing import Any, Literal, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from .. import exports
from ..errors import InvalidInput, NotFound
from ..model import COMPRESSION, Session
from ..store.aio import AsyncStore
from ..inputs import MAX_PAGE
from ..store.listing import listed
from ..titles import untitled_words
from . import markdown
from .responses import JSONResponse
from .stores import Stores

router = APIRouter(tags=["sessions"])

ProfileQuery = Query(None, description="The profile whose store to use (default: main).", max_length=64)
MAX_BATCH = 1000  # messages in one POST
OFF_LOOP = 64 * 1024  # bodies larger than this are parsed on a worker thread
Body = TypeVar("Body", bound=BaseModel)


def row(obj: Any) -> dict[str, Any]:
    """A Session or Message as a JSON object: its fields, shallow (asdict's deep copy is
    most of a listing's cost, and the values are only serialised)."""
    return {name: getattr(obj, name) for name in obj.__dataclass_fields__}


def stores_of(request: Request) -> Stores:
    return request.app.state.stores


async def store_for(request: Request, profile: str | None) -> AsyncStore:
    return await stores_of(request).get(profile)


async def with_first_words(store: AsyncStore, items: list[dict[str, Any]], prefix: str = "") -> list[dict[str, Any]]:
    """The items, each with `{prefix}first_words` beside its `{prefix}title`: the first words
    its user said when it has no title (titles.first_words), else null. `prefix` is "" for
    sessions, "session_" for search hits."""
    titles = {item[prefix + "id"]: item[prefix + "title"] for item in items}
    words = await asyncio.to_thread(untitled_words, store.sync, titles) if not all(titles.values()) else {}
    for item in items:
        item[prefix + "first_words"] = words.get(item[prefix + "id"])
    return items


_HALF_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


async def parsed(request: Request, model: type[Body]) -> Body:
    """The request's JSON body as `model`; its errors are the service's usual 422."""
    raw = await request.body()

    def parse() -> Body:
        try:
            try:
                return model.model_validate_json(raw)
            except ValidationError as exc:
                if not _HALF_ESCAPE.search(raw) or exc.errors()[0]["type"] != "json_invalid":
                    raise
            # Half a character ("\ud83d" alone, which a message's text may hold) is valid
            # JSON that pydantic's parser refuses; Python's reads it exactly.
            try:
                return model.model_validate(json.loads(raw))
            except ValueError as exc:  # not JSON after all: pydantic's own words for it
                raise RequestValidationError([{"loc": ("body",), "msg": f"Invalid JSON: {exc}",
                                               "type": "json_invalid"}]) from None
        except ValidationError as exc:
            raise RequestValidationError(exc.errors(include_url=False)) from None

    return await asyncio.to_thread(parse) if len(raw) > OFF_LOOP else parse()


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": model.model_json_schema()}}}}


class NewSession(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str = Field(..., min_length=1, max_length=200, description="The surface writing it (cli, desktop...).")
    title: str | None = Field(None, max_length=1000)
    session_id: str | None = Field(None, max_length=200)
    model: str | None = Field(None, max_length=200)
    user_id: str | None = Field(None, max_length=200)
    session_key: str | None = Field(None, max_length=1000)
    parent_session_id: str | None = Field(None, max_length=200)
    parent_relation: str | None = Field(None, max_length=200)
    metadata: dict[str, Any] | None = None
    hidden: StrictBool | None = Field(None, description="Create it hidden: left out of default listings.")


class SessionPatch(BaseModel):
    """Fields to change; a field left out is unchanged, `title: null` clears the title."""

    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(None, max_length=1000)
    pinned: StrictBool | None = None
    archived: StrictBool | None = None
    hidden: StrictBool | None = None


class NewMessages(BaseModel):
    model_config = ConfigDict(extra="forbid")
    messages: list[dict[str, Any]] = Field(..., max_length=MAX_BATCH,
                                           description="Messages as store.append takes them (role, content, uid...).")


@router.get("/sessions")
async def list_sessions(
    request: Request,
    profile: str | None = ProfileQuery,
    source: str | None = Query(None, max_length=200),
    user_id: str | None = Query(None, max_length=200, description="Only this person's sessions."),
    q: str | None = Query(None, max_length=1000, description="Only sessions with a message matching this search."),
    pinned: bool | None = None,
    include_archived: bool = False,
    include_hidden: bool = False,
    since: float | None = Query(None, allow_inf_nan=False),
    until: float | None = Query(None, allow_inf_nan=False),
    limit: int = Query(50, ge=1, le=MAX_PAGE),
    cursor: str | None = Query(None, max_length=200),
    conversations: bool = Query(False, description=(
        "One entry per conversation: a session a compaction rotated into another is left out, and its "
        "tip (store.tip) stands for it; store.lineage reads the whole conversation.")),
) -> dict:
    """Sessions, most recently active first (store.list_sessions); pass `cursor` back for the next page.

    With `q`, the sessions holding the best matches of that search instead, best first
    (one page: no cursor).
    """
    store = await store_for(request, profile)
    if q is None:
        items: list[Session] = []
        while True:  # with `conversations`, pages are read on until `limit` sessions are left in
            page = await store.list_sessions(source=source, user_id=user_id, pinned=pinned,
                                             include_archived=include_archived, include_hidden=include_hidden,
                                             since=since, until=until,
                                             limit=limit - len(items), cursor=cursor)
            items += [s for s in page.items if not (conversations and await _rotated(store, s))]
            cursor = page.cursor
            if cursor is None or len(items) == limit:
                break
        # JSONResponse directly: the rows are plain JSON already (no re-encoding pass).
        return JSONResponse({"items": await with_first_words(store, [row(s) for s in items]), "cursor": cursor})
    hits = await store.search(q, source=source, user_id=user_id, since=since, until=until, limit=MAX_PAGE)
    found: list[dict] = []
    seen: set[str] = set()
    for hit in hits:
        sid = (await store.tip(hit.session_id)).id if conversations else hit.session_id
        if sid in seen or len(found) >= limit:
            continue
        seen.add(sid)
        s = await store.get_session(sid)
        if (pinned is not None and s.pinned != pinned) or (s.archived and not include_archived) \
                or (s.hidden and not include_hidden):
            continue
        found.append(listed(s).to_dict())  # a listing, bounded as store.list_sessions bounds it
    return {"items": await with_first_words(store, found), "cursor": None}


async def _rotated(store: AsyncStore, session: Session) -> bool:
    """Whether a compaction rotated `session` into a session that continues it (a session
    closed by compression with no continuation is its own tip, and stays listed)."""
    return session.end_reason == COMPRESSION and (await store.tip(session.id)).id != session.id


@router.post("/sessions", status_code=201, openapi_extra=body_schema(NewSession))
async def create_session(request: Request, profile: str | None = ProfileQuery) -> dict:
    """Create a session (store.create_session)."""
    body = await parsed(request, NewSession)
    store = await store_for(request, profile)
    fields = body.model_dump(exclude_none=True)
    source = fields.pop("source")
    return (await store.create_session(source, **fields)).to_dict()


@router.get("/sessions/{session_id}")
async def get_session(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """The session (store.get_session), with `first_words` when it has no title."""
    store = await store_for(request, profile)
    return (await with_first_words(store, [(await store.get_session(session_id)).to_dict()]))[0]


@router.patch("/sessions/{session_id}", openapi_extra=body_schema(SessionPatch))
async def update_session(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """Rename (store.set_title) and set flags (store.set_flags); returns the session."""
    body = await parsed(request, SessionPatch)
    store = await store_for(request, profile)
    given = body.model_fields_set
    if not given:
        raise InvalidInput("nothing to change: give title, pinned, archived or hidden")
    session = await store.get_session(session_id)
    if "title" in given:
        session = await store.set_title(session_id, body.title)
    flags = {k: getattr(body, k) for k in ("pinned", "archived", "hidden") if k in given}
    if any(v is None for v in flags.values()):
        raise InvalidInput("pinned, archived and hidden must be true or false")
    if flags:
        session = await store.set_flags(session_id, **flags)
    return session.to_dict()


@router.delete("/sessions/{session_id}")
async def delete_session(request: Request, session_id: str, conversation: bool = False,
                         profile: str | None = ProfileQuery) -> dict:
    """Delete the session with its messages and usage, with `conversation` every session of its
    compression tree at once (store.delete_session); `sessions`: every id deleted."""
    store = await store_for(request, profile)
    deleted = await store.delete_session(session_id, conversation=conversation)
    return {"deleted": session_id, "sessions": deleted}


@router.get("/sessions/{session_id}/transcript")
@router.get("/sessions/{session_id}/messages", deprecated=True)  # the previous release's path, until the next
async def transcript(
    request: Request,
    session_id: str,
    profile: str | None = ProfileQuery,
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    order: Literal["asc", "desc", "latest"] = Query(
        "asc", description="asc: oldest first; desc: newest first; latest: the newest `limit`, oldest first."),
    include_compacted: bool = False,
    before: int | None = Query(None, ge=0, le=2**62, description="Only messages with a smaller id."),
    after: int | None = Query(None, ge=0, le=2**62, description="Only messages with a larger id."),
    around: int | None = Query(None, ge=0, le=2**62, description=(
        "The message with this id and the messages around it (`limit` in all, oldest first): "
        "where a search hit takes you. Not with before, after or order.")),
    html: bool = Query(False, description="Also give each message's text as sanitised HTML (`html`), "
                                          "rendered from Markdown."),
    tip: bool = Query(False, description=(
        "Read the session that continues this one now (its tip, where a compaction rotated it): the live "
        "conversation, found in the same read as its messages. The answer's `session_id` names it: page on "
        "with that id, since before/after name messages of one session.")),
) -> dict:
    """A page of the transcript (store.transcript). `next_before`/`next_after` page on;
    null when there is nothing more that way."""
    store = await store_for(request, profile)
    if around is not None:
        if before is not None or after is not None or order != "asc":
            raise InvalidInput("around takes no before, after or order: it is a page of its own")
        if tip:  # found once: the two reads around the message are of one session
            session_id = (await store.tip(session_id)).id
        return await _around(store, session_id, around, limit, include_compacted, html)
    descending = order in ("desc", "latest")
    rows = await store.transcript(session_id, include_compacted=include_compacted, limit=limit, before=before,
                                  after=after, order="desc" if descending else "asc", tip=tip)
    full = len(rows) == limit
    if order == "latest":
        rows.reverse()
    page: dict[str, Any] = {"items": [message_row(m, html) for m in rows]}
    if tip:
        page["session_id"] = rows[0].session_id if rows else (await store.tip(session_id)).id
    if descending:
        oldest = min((m.id for m in rows), default=None)
        return JSONResponse({**page, "next_before": oldest if full else None, "next_after": None})
    newest = max((m.id for m in rows), default=None)
    return JSONResponse({**page, "next_after": newest if full else None, "next_before": None})


async def _around(store: AsyncStore, session_id: str, target: int, limit: int, include_compacted: bool,
                  html: bool) -> JSONResponse:
    """The target and up to `limit - 1` neighbours, half before it, from the store's own
    id paging: `before=target+1` newest first ends at the target, `after=target` follows it."""
    older_wanted = (limit - 1) // 2 + 1  # with the target
    upto = await store.transcript(session_id, include_compacted=include_compacted, limit=older_wanted,
                                  before=target + 1, order="desc")
    if not upto or upto[0].id != target:
        raise NotFound(f"message {target} is not in session {session_id}"
                       + ("" if include_compacted else " (or it was compacted: pass include_compacted=true)"))
    newer = await store.transcript(session_id, include_compacted=include_compacted,
                                   limit=limit - len(upto), after=target, order="asc") if limit > len(upto) else []
    rows = upto[::-1] + newer
    return JSONResponse({
        "items": [message_row(m, html) for m in rows],
        "next_before": rows[0].id if len(upto) == older_wanted else None,
        "next_after": rows[-1].id if len(newer) == limit - len(upto) else None,
    })


def message_row(message: Any, html: bool) -> dict[str, Any]:
    fields = row(message)
    if html:
        fields["html"] = "" if message.role == "tool" else markdown.to_html(message.text)
    return fields


STORED = ("id", "uid", "seq", "state")  # what an append answers of each row: its identity, not its content


@router.post("/sessions/{session_id}/append", openapi_extra=body_schema(NewMessages))
@router.post("/sessions/{session_id}/messages", openapi_extra=body_schema(NewMessages), deprecated=True)
async def append(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """Store messages as one atomic batch (store.append): idempotent by uid; returns the
    stored rows' identities (id, uid, seq, state)."""
    body = await parsed(request, NewMessages)
    store = await store_for(request, profile)
    if not body.messages:
        raise InvalidInput("messages must hold at least one message")
    rows = await store.append(session_id, body.messages)
    return JSONResponse({"items": [{name: getattr(m, name) for name in STORED} for m in rows]})


@router.get("/sessions/{session_id}/lineage")
async def lineage(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """The conversation across compaction rotations, root first, tip last (store.lineage)."""
    store = await store_for(request, profile)
    return {"items": [s.to_dict() for s in await store.lineage(session_id)]}


@router.get("/sessions/{session_id}/usage")
async def usage(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """Accumulated model usage: totals and one row per model, provider and task (store.usage)."""
    store = await store_for(request, profile)
    return (await store.usage(session_id)).to_dict()


@router.get("/sessions/{session_id}/export", response_class=StreamingResponse,
            responses={200: {"content": {"application/x-ndjson": {}, "text/markdown": {}}}})
async def export(request: Request, session_id: str, profile: str | None = ProfileQuery,
                 format: Literal["jsonl", "md"] = "jsonl") -> StreamingResponse:
    """The session as the lossless JSONL export or as Markdown (store.export), streamed in
    constant memory and never capped."""
    store = await store_for(request, profile)
    records = await asyncio.to_thread(store.sync.export, [session_id])  # NotFound before any byte

    def lines():
        # A sync generator: Starlette pulls it on a worker thread, never on the event loop.
        with closing(records):
            yield from exports.jsonl(records) if format == "jsonl" else exports.markdown(records)

    media = "application/x-ndjson" if format == "jsonl" else "text/markdown; charset=utf-8"
    return StreamingResponse(lines(), media_type=media, headers={"Content-Disposition": attachment(f"{session_id}.{format}")})


def attachment(name: str) -> str:
    """A Content-Disposition for downloading `name`: an ASCII fallback, and the exact
    name as RFC 5987 UTF-8 (`filename*`), which every current browser prefers."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
