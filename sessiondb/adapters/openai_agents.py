"""sessiondb as an OpenAI Agents SDK session: `Runner.run(agent, text, session=SessiondbSession(...))`.

    from sessiondb.adapters.openai_agents import SessiondbSession
    session = SessiondbSession("support-42", "agents.db")     # or store=, or a postgresql:// URL

The SDK's session id names a sessiondb session (source "openai-agents"), created on the
first write; an id sessiondb cannot take as it is (a '/', a control character...) is
mapped to `oa-` and a digest of it, and kept in the session's metadata; with `user_id=`,
the session is that person's and named by a digest of the user and the id (binding.py).
Items are stored one message each (readable, searchable, lossless: the items section below
says how). What sessiondb adds: idempotent appends across processes, undo that keeps
history (pop_item, clear_session), compaction under a lease that loses no concurrent
write (run_compaction), search, usage and branches. docs/adapters/openai-agents.md says
what is guaranteed.

One module, in three parts: an item as a message, the conversation's store work (run on
a worker thread), and the SDK's Session over them.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import secrets
from functools import partial
from typing import Any, Awaitable, Callable, Mapping, Sequence

from agents.items import TResponseInputItem
from agents.memory import OpenAIResponsesCompactionArgs, SessionABC, SessionSettings
from agents.memory.openai_responses_compaction_session import (
    DEFAULT_COMPACTION_THRESHOLD, select_compaction_candidate_items,
)
from agents.memory.session_settings import coerce_session_settings, resolve_session_limit
from agents.models import get_default_model
from agents.result import RunResult

from ..errors import CompactionBusy, InvalidInput, NotFound, SessionExists, StoreClosed
from ..importers import responses
from ..inputs import MAX_PAGE, check_session_id
from ..model import MAX_UID_LENGTH, Message, Role, SearchHit, Session, Usage, content_text, dump_json
from ..store.aio import AsyncStore
from ..store.alignment import align
from ..store.contract import Store
from ..store.lineage import MAX_LANDINGS
from .binding import StoreBinding, user_scope, user_session_id


# --- an item as a message ------------------------------------------------------------------
#
# The OpenAI Agents SDK's session items as sessiondb messages: readable, searchable, lossless.
#
# Each item is one message. Its role and text are what sessiondb shows and searches (the
# Responses reading that importers/responses.py gives: user, assistant and system
# messages, tool calls as an assistant's `tool_calls`, their outputs as tool messages,
# reasoning summaries as `reasoning`); the item itself rides in the content as a part
# `{"type": "openai_agents_item", "json": <the item exactly as json.dumps wrote it>}`, so
# that reading it back returns the item byte for byte, key order included. An item sessiondb
# has no reading of (a compaction item, an MCP listing...) is an assistant message without
# text. A message written by someone else (the HTTP API, the CLI) has no such part and is
# read as the plain item of its role and text.
#
# Uids (the store's idempotency key, docs/adapters/openai-agents.md):
# - an item with its own identity, `id` (not the SDK's placeholder) or else `call_id`, is
#   `oa-<type>-<that id>-` and a fingerprint of the item, wherever and whenever it is added:
#   the session protocol does not promise unique ids (the SDK's own fake model gives every
#   message the id "1"), so an id repeated on a different item names a distinct item, while
#   the same item added again is the same uid;
# - any other item is `oa-` and a fingerprint of the item with the uid of the item it
#   follows where it lands (the one before it in its batch, or the newest stored message),
#   so the same words said in two turns are two messages, and a retry that lands where the
#   first attempt did computes the same uid.
# Both take the session's epoch (a fresh token at each pop_item and clear_session; "0"
# before any, and a count where an earlier release kept one) so an item added again after it
# was undone is stored again instead of matching its undone row.

#: The type of the content part that keeps the item as it was added.
ITEM_PART = "openai_agents_item"
#: The id the SDK puts on items whose model gave none: not an identity.
_PLACEHOLDER_IDS = frozenset({"__fake_id__"})


def normalise(item: Any, where: str) -> tuple[dict[str, Any], str]:
    """The item as JSON will give it back, and its JSON text; InvalidInput for what is not an item."""
    if not isinstance(item, Mapping):
        raise InvalidInput(f"{where}: a session item is a dict, not {type(item).__name__}")
    try:
        text = json.dumps(item, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{where}: the item is not JSON-serialisable: {exc}") from None
    return json.loads(text), text


def own_identity(item: Mapping[str, Any]) -> str | None:
    """The id the item carries itself: `id`, else `call_id` (calls and their outputs)."""
    for key in ("id", "call_id"):
        value = item.get(key)
        if isinstance(value, str) and value and value not in _PLACEHOLDER_IDS:
            return value
    return None


def item_uid(item: Mapping[str, Any], follows: str, epoch: str) -> str:
    """The uid of `item` landing after the stored message whose uid is `follows` ('' first)."""
    suffix = f"~{epoch}" if epoch != NO_UNDO else ""
    identity = own_identity(item)
    if identity is not None:
        uid = f"oa-{item.get('type') or 'message'}-{identity}-{_digest(dump_json(item, 'item'))[:16]}{suffix}"
        if len(uid) <= MAX_UID_LENGTH and "\x00" not in uid:
            return uid
        return "oa-" + _digest("identity", uid)
    return "oa-" + _digest(dump_json(item, "item"), follows, epoch)


def to_message(item: dict[str, Any], text: str, uid: str, names: dict[str, str]) -> dict[str, Any]:
    """The message that stores `item` (its JSON `text`) under `uid`; `names` maps call ids to
    tool names, to name the outputs of calls seen before."""
    message = responses.message(item, names) or {"role": Role.ASSISTANT.value, "content": None}
    readable = message.get("content")
    message["content"] = ([{"type": "text", "text": readable}] if readable else []) + [
        {"type": ITEM_PART, "json": text}]
    message["uid"] = uid
    return message


def from_message(message: Message) -> dict[str, Any]:
    """The item a stored message holds: the one added, or the plain item of its role and text."""
    if isinstance(message.content, list):
        for part in message.content:
            if isinstance(part, Mapping) and part.get("type") == ITEM_PART and isinstance(part.get("json"), str):
                return json.loads(part["json"])
    text = content_text(message.content)
    if message.role == Role.TOOL.value and message.tool_call_id:
        return {"type": "function_call_output", "call_id": message.tool_call_id, "output": text}
    role = Role.USER.value if message.role == Role.TOOL.value else message.role
    return {"role": role, "content": text}


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:40]


# --- the conversation in the store ---------------------------------------------------------
#
# One Agents SDK conversation in a sessiondb store: the blocking work behind SessiondbSession.
#
# Every method is one short sequence of Store calls, run by SessiondbSession on a worker
# thread. The conversation is the sessiondb session named by the SDK's id and the
# sessions a compaction rotated it into: reads follow `tip()`, writes land at the tip.

SOURCE = "openai-agents"
#: Session metadata: the SDK's own id (when it was mapped) and the undo epoch.
ORIGINAL_ID = "openai_agents_session_id"
EPOCH = "openai_agents_epoch"
NO_UNDO = "0"  # the epoch of a conversation never undone


class StoredConversation:
    """The conversation `session_id` (sessiondb's id; `original` the SDK's) in `store`, of
    the person `user_id` (None: no one in particular)."""

    def __init__(self, store: Store, session_id: str, original: str, user_id: str | None = None) -> None:
        self.store, self.session_id, self.original, self.user_id = store, session_id, original, user_id

    def root(self, create: bool) -> Session | None:
        """The session the SDK's id names, created on first write (source openai-agents)."""
        try:
            return self.store.get_session(self.session_id)
        except NotFound:
            if not create:
                return None
        metadata = {} if self.session_id == self.original else {ORIGINAL_ID: self.original}
        try:
            return self.store.create_session(SOURCE, session_id=self.session_id, user_id=self.user_id,
                                             metadata=metadata)
        except SessionExists:  # another writer created it first
            return self.store.get_session(self.session_id)

    def epoch(self, root: Session | None = None) -> str:
        """The conversation's undo epoch, part of every uid minted after an undo."""
        root = root or self.root(create=False)
        return str(root.metadata.get(EPOCH, NO_UNDO)) if root else NO_UNDO

    def live(self, limit: int | None) -> list[Message]:
        """The tip's newest `limit` live messages (each one's session_id names the tip), in one
        read that a rotation cannot split."""
        try:
            return (self.store.transcript(self.session_id, tip=True) if limit is None
                    else self.store.transcript(self.session_id, tip=True, limit=limit, order="desc")[::-1])
        except NotFound:
            return []

    def add(self, batch: list[tuple[dict[str, Any], str]]) -> None:
        """Append the (item, JSON text) pairs not yet stored, in one atomic batch: one store
        call, which creates the session on first write and reads the conversation's end."""
        metadata = {} if self.session_id == self.original else {ORIGINAL_ID: self.original}
        self.store.extend(self.session_id, partial(self._unstored, batch), newest=min(len(batch), MAX_PAGE),
                          create={"source": SOURCE, "user_id": self.user_id, "metadata": metadata})

    def _unstored(self, batch: list[tuple[dict[str, Any], str]], root: Session, tail: list[Message],
                  history: Callable[[], list[Message]]) -> list[dict[str, Any]]:
        """The messages storing what `batch` holds beyond the conversation's end (`tail`)."""
        stored = [from_message(m) for m in tail]
        given = [item for item, _text in batch]
        # A batch that starts with the newest stored items is a retry (or the whole history
        # handed back): those are stored already, and what follows them lands after them.
        done = next((k for k in range(min(len(stored), len(given)), 0, -1) if stored[-k:] == given[:k]), 0)
        if not done and len(tail) < len(given):
            done = self.handed_back(given, history())
        return self.messages(batch[done:], tail[-1].uid if tail else "", self.epoch(root))

    @staticmethod
    def handed_back(given: list[dict[str, Any]], history: list[Message]) -> int:
        """How many items at the head of `given` are the whole stored `history` handed back,
        as an agent kept it from before compactions (S-47): matched item by item against the
        lineage, archived items and summaries included (store/alignment.py). A batch that
        does not reach the end of the history is new items, however it starts."""
        items = {m.id: from_message(m) for m in history}
        keys = {mid: dump_json(item, "item") for mid, item in items.items()}
        found = align(history, len(given), lambda i, row: items[row.id] == given[i],
                      lambda i: dump_json(given[i], "item"), lambda row: (keys[row.id],))
        return found.prefix if found.whole else 0

    def messages(self, batch: Sequence[Any], follows: str, epoch: str) -> list[dict[str, Any]]:
        """The messages storing `batch` (items, or (item, JSON text) pairs) after uid `follows`."""
        names: dict[str, str] = {}
        messages = []
        for i, entry in enumerate(batch):
            item, text = entry if isinstance(entry, tuple) else normalise(entry, f"summary item {i}")
            follows = item_uid(item, follows, epoch)
            messages.append(to_message(item, text, follows, names))
        return messages

    def pop(self) -> dict[str, Any] | None:
        """Rewind the newest live message; the item it held."""
        tail = self.live(2)
        if not tail:
            return None
        self._next_epoch()
        popped = tail[-1]
        for _ in range(MAX_LANDINGS):
            # The newest message as read, and only it: one another writer appended since stays.
            try:
                if self.store.rewind(tail[-1].session_id, tail[-2].id if len(tail) > 1 else 0,
                                     through_message_id=tail[-1].id):
                    break
            except NotFound:  # the messages read are no longer in that session
                pass
            # A compaction rotated the conversation meanwhile. The item is undone where it went
            # on (kept, as the newest message of the session continuing it), unless the
            # compaction archived it, which took it out of the conversation already.
            tail = self.live(2)
            if not tail or tail[-1].uid != popped.uid:
                break
        return from_message(popped)

    def clear(self) -> None:
        """Rewind every live message, in the session continuing the conversation now."""
        try:
            self._next_epoch()
        except NotFound:  # nothing stored yet
            return
        self.store.rewind(self.session_id, 0)

    def _next_epoch(self) -> None:
        # Before the rewind: an item undone now and added again must not meet its undone row.
        # A fresh token rather than a count read and raised: one store call, and never the
        # epoch of an earlier undo, whatever runs at once.
        self.store.update_metadata(self.session_id, {EPOCH: secrets.token_hex(8)})

    def search(self, query: str, limit: int, include_tools: bool) -> list[SearchHit]:
        """Matches in every session of the conversation (those compactions rotated it into), best first."""
        return self.store.search(query, session_id=self.session_id, conversation=True, user_id=self.user_id,
                                 limit=limit, include_tools=include_tools)

    def record_usage(self, usages: list[Any], model: str, provider: str) -> None:
        """Record the SDK's Usage values (one per model call) in one store call: their sums,
        counted as that many calls."""
        if not usages:
            return
        record = partial(
            self.store.record_usage, self.session_id, model=model, provider=provider, calls=len(usages),
            input_tokens=sum(u.input_tokens for u in usages), output_tokens=sum(u.output_tokens for u in usages),
            cache_read_tokens=sum(u.input_tokens_details.cached_tokens or 0 for u in usages),
            # Reported by the SDK's releases that count cache writes; an earlier one has no such field.
            cache_write_tokens=sum(getattr(u.input_tokens_details, "cache_write_tokens", 0) or 0 for u in usages),
            reasoning_tokens=sum(u.output_tokens_details.reasoning_tokens or 0 for u in usages))
        try:
            record()
        except NotFound:  # the conversation's first write: its session is created, then recorded in
            self.root(create=True)
            record()

    def branch(self, turn_number: int, title: str | None) -> Session:
        """A new session copying the live conversation before its `turn_number`-th user message."""
        rows = self.live(None)
        users = [i for i, m in enumerate(rows) if m.role == Role.USER.value]
        if isinstance(turn_number, bool) or not isinstance(turn_number, int) or not 1 <= turn_number <= len(users):
            raise InvalidInput(f"turn_number must be between 1 and {len(users)} (the conversation's user turns)")
        at = users[turn_number - 1]
        return self.store.branch(rows[at].session_id, rows[at - 1].id if at else 0, title=title)


# --- the SDK's Session ---------------------------------------------------------------------

Items = list[TResponseInputItem]
#: Replaces the covered history with its summary items (a model call, usually).
Summariser = Callable[[Items], Items | Awaitable[Items]]


def store_session_id(session_id: Any, user_id: str | None = None) -> str:
    """The sessiondb id of an SDK session id: itself when sessiondb takes it, else `oa-<digest>`;
    a user's, `oa-user-<digest>` of the user and the id."""
    if not isinstance(session_id, str):
        raise InvalidInput(f"session_id must be text, not {type(session_id).__name__}")
    if user_id is not None:
        return user_session_id("oa", user_id, session_id)
    try:
        return check_session_id(session_id)
    except InvalidInput:
        return "oa-" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def default_should_compact(items: Items) -> bool:
    """The SDK's own rule: compact once 10 items that are not user messages have gathered."""
    return len(select_compaction_candidate_items(items)) >= DEFAULT_COMPACTION_THRESHOLD


class SessiondbSession(SessionABC):
    """One agent conversation kept in a sessiondb store; with `user_id`, one of that person's,
    which another user's session of the same id never reads nor writes."""

    def __init__(
        self,
        session_id: str,
        location: str | os.PathLike[str] | None = None,
        *,
        store: Store | AsyncStore | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        summarise: Summariser | None = None,
        should_compact: Callable[[Items], bool] = default_should_compact,
        compaction_mode: str = "in_place",
        compaction_ttl: float = 300,
        user_id: str | None = None,
        **open_options: Any,
    ) -> None:
        if compaction_mode not in ("in_place", "rotate"):
            raise InvalidInput(f"compaction_mode must be 'in_place' or 'rotate', not {compaction_mode!r}")
        self.session_id = session_id
        self.user_id = user_scope(user_id)
        self.store_session_id = store_session_id(session_id, self.user_id)
        self.session_settings = coerce_session_settings(session_settings or SessionSettings())
        self._summarise = summarise
        self._should_compact = should_compact
        self._compaction_mode, self._compaction_ttl = compaction_mode, compaction_ttl
        self._binding = StoreBinding(store, location, **open_options)
        self._store = self._binding.sync
        self._conversation = StoredConversation(self._store, self.store_session_id, session_id, self.user_id)
        self._closed = False

    @property
    def store(self) -> Store:
        """The sessiondb store this session writes to."""
        return self._store

    # --- the SDK's Session protocol -----------------------------------------------------

    async def get_items(self, limit: int | None = None) -> Items:
        """The live conversation (across compactions and rotations), the newest `limit` items."""
        self._check_open()
        limit = resolve_session_limit(limit, self.session_settings)
        if limit == 0:
            return []
        rows = await self._off_loop(self._conversation.live, None if limit is None or limit < 0 else limit)
        return [from_message(m) for m in rows]

    async def add_items(self, items: Items) -> None:
        """Store the items as one atomic append; what is already stored is not stored again."""
        self._check_open()
        batch = [normalise(item, f"item {i}") for i, item in enumerate(items)]
        if batch:
            await self._off_loop(self._conversation.add, batch)

    async def pop_item(self) -> TResponseInputItem | None:
        """Undo the newest item and return it (rewound: kept and restorable, never searched)."""
        self._check_open()
        return await self._off_loop(self._conversation.pop)

    async def clear_session(self) -> None:
        """Undo every live item: rewound, kept, restorable with `store.restore_rewound`."""
        self._check_open()
        await self._off_loop(self._conversation.clear)

    # --- compaction ---------------------------------------------------------------------

    async def run_compaction(self, args: OpenAIResponsesCompactionArgs | None = None) -> None:
        """Replace the history with the summariser's items under a compaction lease.

        The runner calls this after every turn; it compacts when `should_compact` says so
        (or `force` is given) and a summariser was given. Items added while the summariser
        runs are above the lease's watermark: they follow the summary. A compaction already
        running elsewhere makes an automatic call a no-op (CompactionBusy when forced).
        """
        self._check_open()
        force = bool(args and args.get("force"))
        if self._summarise is None:
            if force:
                raise InvalidInput("run_compaction needs a summariser: SessiondbSession(..., summarise=...)")
            return
        if not force and not self._should_compact(await self.get_items(-1)):
            return
        try:
            lease = await self._binding.call("begin_compaction", self.store_session_id, holder=SOURCE,
                                             ttl=self._compaction_ttl)
        except (CompactionBusy, NotFound):
            if force:
                raise
            return
        try:
            covered = await self._binding.call("transcript", lease.session_id, before=lease.watermark + 1)
            if not covered:
                await self._binding.call("abort_compaction", lease)
                return
            summary = self._summarise([from_message(m) for m in covered])
            summary = await summary if inspect.isawaitable(summary) else summary
            epoch = await self._off_loop(self._conversation.epoch)
            messages = self._conversation.messages(list(summary or ()), f"summary-{lease.token}", epoch)
            if not messages:
                raise InvalidInput("the summariser returned no items: a compaction needs a summary")
            await self._binding.call("commit_compaction", lease, messages, mode=self._compaction_mode)
        except BaseException:
            await asyncio.shield(self._binding.call("abort_compaction", lease))
            raise

    # --- what sessiondb adds ------------------------------------------------------------

    async def search(self, query: str, *, limit: int = 20, include_tools: bool = False) -> list[SearchHit]:
        """This conversation's messages matching `query` (sessiondb's query language), best
        first, compacted history included, rewound never."""
        self._check_open()
        return await self._off_loop(self._conversation.search, query, limit, include_tools)

    async def store_run_usage(self, result: RunResult, *, model: str | None = None, provider: str = "openai") -> None:
        """Add a finished run's model calls to the session's usage (one call per model
        response), in one store call.

        Not idempotent: recording one run twice counts it twice.
        """
        self._check_open()
        name = model or _model_name(result.last_agent.model)
        await self._off_loop(self._conversation.record_usage, [r.usage for r in result.raw_responses], name, provider)

    async def usage(self) -> Usage:
        """The session's accumulated usage: totals and one row per (model, provider, task)."""
        self._check_open()
        try:
            return await self._binding.call("usage", self.store_session_id)
        except NotFound:
            return Usage(session_id=self.store_session_id)

    async def create_branch_from_turn(self, turn_number: int, *, title: str | None = None) -> SessiondbSession:
        """A new session holding this conversation before its `turn_number`-th user message
        (1 is the first), to ask that turn again differently; this session is unchanged.
        The branch shares this session's store (still this session's to close) and its user."""
        self._check_open()
        branch = await self._off_loop(self._conversation.branch, turn_number, title)
        session = SessiondbSession(branch.id, store=self._store, session_settings=self.session_settings,
                                   summarise=self._summarise, should_compact=self._should_compact,
                                   compaction_mode=self._compaction_mode, compaction_ttl=self._compaction_ttl,
                                   user_id=self.user_id)
        # A branch's id is minted by the store, not derived from an SDK id: a user's branch is
        # the session of that id itself (the store gave it this user).
        session.store_session_id = branch.id
        session._conversation = StoredConversation(self._store, branch.id, branch.id, self.user_id)
        return session

    def close(self) -> None:
        """Close the store if this session opened it; a handed-in store stays open."""
        self._closed = True
        self._binding.close()

    async def __aenter__(self) -> SessiondbSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    # --- the blocking work runs on a worker thread -----------------------------------------

    async def _off_loop(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(partial(fn, *args))

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"the session {self.session_id!r} is closed")


def _model_name(model: Any) -> str:
    """The name of an agent's model: as given, a model object's own name, or the SDK's default."""
    if model is None:
        return get_default_model()
    if isinstance(model, str):
        return model
    name = getattr(model, "model", None)
    return name if isinstance(name, str) else type(model).__name__
