"""The backend-neutral layer: every public store call is validated here, once.

`CheckedStore` implements the Store contract (store/contract.py) over any backend
(store/backend.py). Each method checks and normalises its input on the caller's thread,
turns it into a typed command (store/commands.py) and hands that to the backend; nothing
reaches a backend unchecked. What every backend needs the same way lives here too:
keeping a batch the store cannot take in the spool (S-13..S-15) and the in-memory size
guard (S-42). Export and import are in store/transfer.py; resume and flush, which keep
a message's identity across what a model sees, in store/identity.py; turn records in
store/turns.py; the optional capabilities in store/capabilities.py.
"""

from __future__ import annotations

import functools
import inspect
import threading
import time
from dataclasses import asdict, replace
from functools import partial
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from .. import embedding
from .. import home as homes
from .. import telemetry
from .. import query as search_query
from .. import recall as questions
from ..errors import (
    DAMAGE_CAUSES, InvalidInput, NotFound, SessionDBError, SessionExists, StorageError, StoreClosed, StoreDamaged,
)
from ..embedding import Embedder
from ..guidance import tell
from ..model import (
    COMPRESSION, MAX_TITLE_LENGTH, ForgetReceipt, Lease, Message, MessageLimits, Page, Role, SearchHit, Session,
    SpoolReport, StoreStats, Usage, VerifyReport,
)
from ..inputs import (
    MAX_PAGE, NewMessage, check_cost, check_count, check_flag, check_label, check_lease, check_limit,
    check_message_ids, check_metadata, check_nonnegative, check_session_id, check_session_ref, check_session_refs,
    check_stored_time, check_timestamp, check_ttl, check_unicode, clean_title, new_session_id, new_uid, prepare_messages, prepare_summary,
)
from . import commands as cmd
from . import compaction, forgetting, handles, lineage, observed, sessions, spool, usage, verify
from .backend import Backend
from .contract import MessageInput
from .identity import Identity
from .policies import PolicyCalls
from .transfer import Transfer
from .turns import Turns

C = TypeVar("C", bound=type)


def naming_the_store(cls: C) -> C:
    """Every public method of `cls` raises a storage error in a person's words: one sentence
    naming this store and the first step, the CLI's for the same cause (guidance.tell); the
    calls telemetry.OPERATIONS names are traced."""
    for name in dir(cls):
        method = inspect.getattr_static(cls, name)
        if not name.startswith("_") and inspect.isfunction(method):
            setattr(cls, name, _telling(name, method))
    return cls


def _telling(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(method):  # an export fails while it is read
        @functools.wraps(method)
        def reading(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return (yield from method(self, *args, **kwargs))
            except StorageError as exc:
                tell(exc, location=self.location, profile=self.profile)
                raise
        return reading

    traced = name in telemetry.OPERATIONS

    @functools.wraps(method)
    def calling(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            if traced and telemetry.recording:  # an attribute read while nothing records
                return telemetry.traced_call(name, self, method, args, kwargs)
            return method(self, *args, **kwargs)
        except StorageError as exc:
            tell(exc, location=self.location, profile=self.profile)
            raise
    return calling


MINT_ATTEMPTS = 3  # minted session ids tried before a fourth, whose conflict is raised
_ROLES = frozenset(r.value for r in Role)
#: What a recall's hits say when the store has no embedder (sessiondb.embedding).
NO_EMBEDDER = "recall is lexical: the store was opened without an embedder (open_store(embedder=...))"
_MODES = ("in_place", "rotate")
#: Sessions one extend patches besides the one it names (an SDK's shared state: ADK's app and user).
MAX_METADATA_OF = 16
#: What `extend` may be told to create a missing session with (create_session's arguments but its id).
_CREATE_KEYS = frozenset({"source", "title", "profile", "session_key", "user_id", "chat_id", "chat_type", "thread_id",
                          "model", "parent_session_id", "metadata", "parent_relation", "started_at", "hidden"})


@naming_the_store
class CheckedStore(Transfer, Identity, Turns, PolicyCalls):
    """A handle on one profile's store, over the backend that holds it."""

    def __init__(self, backend: Backend, *, profile: str | None, clock: Callable[[], float] | None = None,
                 limits: MessageLimits = MessageLimits(), replay_spool: bool = True,
                 embedder: Embedder | None = None) -> None:
        self.backend = backend  # the backend's own handle, for backend-specific tools and tests
        self._profile = profile
        self._embedder = embedder  # a question's meaning (the backend has it for the messages')
        self._limits = limits
        if clock is not None and not callable(clock):
            raise InvalidInput("clock must be a callable returning seconds since the epoch")
        # Every time this handle stamps or judges (starts, ends, arrivals, leases) comes from
        # here; handles on one store share the backend's writer, never the clock.
        self._clock = time.time if clock is None else clock
        self._closed = threading.Event()
        self._release_if_dropped = handles.watch(self, backend)
        telemetry.watch(self, observed.reading)
        if replay_spool and spool.pending(backend.spool_anchor):
            # A healthy open replays what an earlier refusal kept; what still fails stays spooled.
            self.replay_spool()

    # --- the handle --------------------------------------------------------------------

    @property
    def profile(self) -> str | None:
        return self._profile

    @property
    def location(self) -> str:
        return self.backend.location

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._release_if_dropped.detach()
        telemetry.forget(self)
        self.backend.close()

    def __enter__(self) -> "CheckedStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r}, profile={self._profile!r})"

    def _open(self) -> Backend:
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        return self.backend

    # --- sessions ----------------------------------------------------------------------

    def create_session(
        self,
        source: str,
        *,
        session_id: str | None = None,
        title: str | None = None,
        profile: str | None = None,
        session_key: str | None = None,
        user_id: str | None = None,
        chat_id: str | None = None,
        chat_type: str | None = None,
        thread_id: str | None = None,
        model: str | None = None,
        parent_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        parent_relation: str | None = None,
        started_at: float | None = None,
        hidden: bool = False,
    ) -> Session:
        now = self._clock()
        given = None if session_id is None else check_session_id(session_id)
        command = self._creation(
            source, session_id=given or new_session_id(now), title=title, profile=profile, session_key=session_key,
            user_id=user_id, chat_id=chat_id, chat_type=chat_type, thread_id=thread_id, model=model,
            parent_session_id=parent_session_id, metadata=metadata, parent_relation=parent_relation,
            started_at=started_at, hidden=hidden, now=now)
        for _attempt in range(MINT_ATTEMPTS):
            try:
                return self._open().write(partial(sessions.create, values=asdict(command)))
            except SessionExists:
                if given is not None:
                    raise
                # A minted id met another minted in the same second: mint again.
                command = replace(command, id=new_session_id(now))
        return self._open().write(partial(sessions.create, values=asdict(command)))

    def _creation(self, source: str, *, session_id: str, title: str | None = None, profile: str | None = None,
                  session_key: str | None = None, user_id: str | None = None, chat_id: str | None = None,
                  chat_type: str | None = None, thread_id: str | None = None, model: str | None = None,
                  parent_session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                  parent_relation: str | None = None, started_at: float | None = None, hidden: bool = False,
                  now: float) -> cmd.CreateSession:
        """create_session's arguments checked, as the command that creates the session."""
        if parent_relation is not None and parent_session_id is None:
            raise InvalidInput("parent_relation needs a parent_session_id")
        if check_flag(hidden, "hidden") and parent_relation == COMPRESSION:
            raise InvalidInput("a session that continues another by compression has its conversation's flags (S-41): "
                               "create it, then hide the whole conversation with set_flags")
        return cmd.CreateSession(
            id=check_session_id(session_id),
            source=check_label(source, "source", required=True),
            profile=homes.validate_profile(profile) if profile is not None else self._profile,
            session_key=check_label(session_key, "session_key"),
            user_id=check_label(user_id, "user_id"),
            chat_id=check_label(chat_id, "chat_id"),
            chat_type=check_label(chat_type, "chat_type"),
            thread_id=check_label(thread_id, "thread_id"),
            title=clean_title(title),
            model=check_label(model, "model"),
            parent_session_id=check_label(parent_session_id, "parent_session_id"),
            parent_relation=check_label(parent_relation, "parent_relation"),
            started_at=now if started_at is None else check_stored_time(started_at, "started_at"),
            metadata=check_metadata(metadata, self._limits),
            hidden=hidden,
        )

    def get_session(self, session_id: str) -> Session:
        return self._open().read(partial(sessions.get, session_id=check_session_ref(session_id)))

    def get_sessions(self, session_ids: Iterable[str]) -> dict[str, Session]:
        return self._open().read(partial(sessions.get_many, session_ids=check_session_refs(session_ids)))

    def get_messages(self, message_ids: Iterable[int]) -> dict[int, Message]:
        return self._open().read(partial(lineage.get_many, message_ids=check_message_ids(message_ids)))

    def list_sessions(
        self,
        *,
        source: str | None = None,
        user_id: str | None = None,
        include_archived: bool = False,
        include_hidden: bool = False,
        pinned: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page:
        backend = self._open()
        # backend.ReplicatedBackend's method where it has one, looked up as an append's is.
        read = getattr(backend, "read_nearby", backend.read)
        return read(partial(sessions.listed, query=cmd.ListSessions(
            source=check_label(source, "source"),
            user_id=check_label(user_id, "user_id"),
            include_archived=check_flag(include_archived, "include_archived"),
            include_hidden=check_flag(include_hidden, "include_hidden"),
            pinned=None if pinned is None else check_flag(pinned, "pinned"),
            since=check_timestamp(since, "since"),
            until=check_timestamp(until, "until"),
            limit=check_limit(limit),
            cursor=None if cursor is None else check_label(cursor, "cursor"),
        )))

    def _change(self, session_id: str, change: cmd.SessionChange) -> Session:
        return self._open().write(partial(sessions.change, session_id=check_session_ref(session_id), change=change))

    def end_session(self, session_id: str, reason: str) -> Session:
        return self._change(session_id, cmd.EndSession(check_label(reason, "reason", required=True), self._clock()))

    def reopen_session(self, session_id: str) -> Session:
        return self._change(session_id, cmd.ReopenSession())

    def set_title(self, session_id: str, title: str | None) -> Session:
        return self._change(session_id, cmd.SetTitle(clean_title(title)))

    def set_flags(
        self,
        session_id: str,
        *,
        pinned: bool | None = None,
        archived: bool | None = None,
        hidden: bool | None = None,
    ) -> Session:
        given = {"pinned": pinned, "archived": archived, "hidden": hidden}
        change = cmd.SetFlags({name: check_flag(value, name) for name, value in given.items() if value is not None})
        return self._open().write(partial(lineage.set_flags, session_id=check_session_ref(session_id), change=change))

    def update_metadata(self, session_id: str, patch: Mapping[str, Any]) -> Session:
        return self._change(session_id, self._metadata_patch(patch))

    def _metadata_patch(self, patch: Any) -> cmd.PatchMetadata:
        if not isinstance(patch, Mapping):  # check_metadata takes None as "no metadata"
            raise InvalidInput(f"the metadata patch must be a mapping, not {type(patch).__name__}")
        check_metadata(patch, self._limits, "the metadata patch")
        return cmd.PatchMetadata(dict(patch), self._limits.max_metadata_bytes)

    def _metadata_patches(self, metadata_of: Any, session_id: str) -> tuple[tuple[str, cmd.PatchMetadata], ...]:
        """extend's `metadata_of`: (session id, patch) pairs in id order, the order their rows are locked in."""
        if metadata_of is None:
            return ()
        if not isinstance(metadata_of, Mapping):
            raise InvalidInput(f"metadata_of maps session ids to metadata patches, not {type(metadata_of).__name__}")
        if len(metadata_of) > MAX_METADATA_OF:
            raise InvalidInput(f"metadata_of names {len(metadata_of):,} sessions; one extend patches at most "
                               f"{MAX_METADATA_OF} besides its own")
        patches = {check_session_ref(other): self._metadata_patch(patch) for other, patch in metadata_of.items()}
        if session_id in patches:
            raise InvalidInput(f"metadata_of names the extended session {session_id}: its patch is `metadata`")
        return tuple(sorted(patches.items()))

    def delete_session(self, session_id: str, *, conversation: bool = False) -> list[str]:
        delete = lineage.delete_conversation if check_flag(conversation, "conversation") else sessions.delete
        return self._open().write(partial(delete, session_id=check_session_ref(session_id)))

    def find_session(self, ref: str) -> Session:
        ref = check_label(ref, "session reference", required=True).strip()
        title = clean_title(ref) if len(ref) <= MAX_TITLE_LENGTH else None
        return self._open().read(partial(sessions.find, ref=ref, title=title))

    # --- messages ----------------------------------------------------------------------

    def append(self, session_id: str, messages: MessageInput | Iterable[MessageInput]) -> list[Message]:
        return self._append_batch(check_session_ref(session_id), tuple(prepare_messages(messages, self._limits)))

    def _append_batch(self, session_id: str, batch: tuple[NewMessage, ...]) -> list[Message]:
        command = cmd.Append(session_id, batch, self._clock())
        backend = self._open()
        work = partial(lineage.append, session_id=session_id, batch=batch, now=command.now)
        # backend.AppendingBackend's method where it has one, looked up: a protocol's
        # isinstance costs about 10 µs, a twentieth of a one-message append on SQLite.
        write_append = getattr(backend, "write_append", None)
        try:
            return write_append(command, work) if write_append is not None else backend.write(work)
        except StorageError as exc:
            if exc.cause not in DAMAGE_CAUSES:
                raise
            raise self._spooled(exc, session_id, batch) from exc

    def _spooled(self, exc: StorageError, session_id: str, batch: Sequence[NewMessage]) -> StoreDamaged:
        """The store cannot take writes; the messages are kept, never dropped (S-13..S-15)."""
        kept = spool.write(self.backend.spool_anchor, session_id, list(batch), exc.cause.value,
                           getattr(self.backend, "generation", None))
        return StoreDamaged.spooled(exc, str(kept))

    def extend(self, session_id: str, build: Callable[..., Iterable[MessageInput]], *, newest: int = 1,
               create: Mapping[str, Any] | None = None, metadata: Mapping[str, Any] | None = None,
               metadata_of: Mapping[str, Mapping[str, Any]] | None = None) -> list[Message]:
        """Append what `build` makes of the conversation's end, in one unit of work.

        `build(root, newest, history)` gets the session `session_id` names (created with
        create_session's keyword arguments `create` if it does not exist), the `newest` newest
        live messages of its tip, oldest first, and `history()`, which reads every message of
        its lineage, compacted ones too. What it returns is checked as `append` checks its
        messages and stored at the tip, after the messages it saw: an adapter whose SDK call
        is one operation makes one store call. `build` may run more than once (a retried
        unit of work) and must only compute. `metadata` is merged into the named session's
        metadata in the same unit of work, and each patch of `metadata_of` into the stored
        session its key names (another session's: the state an SDK shares between
        conversations).
        """
        session_id = check_session_ref(session_id)
        if not callable(build):
            raise InvalidInput(f"build must be a callable, not {type(build).__name__}")
        if check_nonnegative(newest, "newest") > MAX_PAGE:
            raise InvalidInput(f"newest must be at most {MAX_PAGE}")
        if create is not None and (not isinstance(create, Mapping) or not set(create) <= _CREATE_KEYS):
            raise InvalidInput(f"create must hold create_session's keyword arguments ({', '.join(sorted(_CREATE_KEYS))})"
                               f", not {create!r}")
        patch = None if metadata is None else self._metadata_patch(metadata)
        patches = self._metadata_patches(metadata_of, session_id)
        now = self._clock()
        creation = None if create is None else asdict(self._creation(session_id=session_id, now=now, **create))

        def prepared(*end: Any) -> tuple[NewMessage, ...]:
            made = list(build(*end))  # nothing to add is no append, where append refuses an empty batch
            return tuple(prepare_messages(made, self._limits)) if made else ()
        try:
            return self._open().write(partial(lineage.extend, session_id=session_id, build=prepared, newest=newest,
                                              creation=creation, now=now, patch=patch, patches=patches))
        except StorageError as exc:
            # The spool keeps messages: a batch whose metadata patches must land with it is
            # refused whole instead.
            if exc.cause not in DAMAGE_CAUSES or patch is not None or patches:
                raise
            try:  # what it would have appended, read as it stands, is kept
                batch = self._open().read(partial(lineage.extend_unlocked, session_id=session_id, build=prepared,
                                                  newest=newest))
            except SessionDBError:
                raise exc from None
            raise self._spooled(exc, session_id, batch) from exc

    def replay_spool(self) -> SpoolReport:
        """Append every spooled batch of this store, oldest first (see store/spool.py)."""
        report = SpoolReport()
        generation = getattr(self.backend, "generation", None)
        for path, error in spool.replay(self.backend.spool_anchor, self.append, generation):
            if error is None:
                report.replayed.append(str(path))
            else:
                report.kept.append((str(path), str(error)))
        return report

    def transcript(
        self,
        session_id: str,
        *,
        include_compacted: bool = False,
        limit: int | None = None,
        before: int | None = None,
        after: int | None = None,
        order: str = "asc",
        tip: bool = False,
    ) -> list[Message]:
        if order not in ("asc", "desc"):
            raise InvalidInput(f"order must be 'asc' or 'desc', not {order!r}")
        return self._open().read(partial(
            lineage.transcript,
            session_id=check_session_ref(session_id),
            tip=check_flag(tip, "tip"),
            include_compacted=check_flag(include_compacted, "include_compacted"),
            limit=check_nonnegative(limit, "limit", optional=True),
            before=check_nonnegative(before, "before", optional=True),
            after=check_nonnegative(after, "after", optional=True),
            order=order,
        ))

    # --- compaction and lineage ----------------------------------------------------------

    def begin_compaction(self, session_id: str, *, holder: str | None = None, ttl: float = 300) -> Lease:
        return self._open().write(partial(compaction.begin, session_id=check_session_ref(session_id),
                                          holder=check_label(holder, "holder"), ttl=check_ttl(ttl), clock=self._clock))

    def refresh_compaction(self, lease: Lease, ttl: float | None = None) -> Lease:
        return self._open().write(partial(compaction.refresh, lease=check_lease(lease),
                                          ttl=None if ttl is None else check_ttl(ttl), clock=self._clock))

    def abort_compaction(self, lease: Lease) -> None:
        self._open().write(partial(compaction.release, lease=check_lease(lease)))

    def commit_compaction(
        self, lease: Lease, summary_messages: MessageInput | Iterable[MessageInput], *, mode: str = "in_place",
    ) -> Session:
        lease = check_lease(lease)
        if mode not in _MODES:
            raise InvalidInput(f"mode must be 'in_place' or 'rotate', not {mode!r}")
        batch = tuple(prepare_summary(summary_messages, self._limits))
        return self._open().write(partial(compaction.commit, lease=lease, batch=batch, mode=mode, clock=self._clock))

    def compaction_lease(self, session_id: str) -> Lease | None:
        return self._open().read(partial(compaction.current, session_id=check_session_ref(session_id)))

    def lineage(self, session_id: str) -> list[Session]:
        return self._open().read(partial(lineage.lineage, session_id=check_session_ref(session_id)))

    def tip(self, session_id: str) -> Session:
        return self._open().read(partial(lineage.tip, session_id=check_session_ref(session_id)))

    def rewind(self, session_id: str, to_message_id: int, *, through_message_id: int | None = None) -> int:
        to = check_nonnegative(to_message_id, "to_message_id")
        through = check_nonnegative(through_message_id, "through_message_id", optional=True)
        if through is not None and through <= to:
            raise InvalidInput(f"through_message_id ({through}) must come after to_message_id ({to}): the messages "
                               "rewound are those after the one and up to the other")
        return self._open().write(partial(lineage.rewind, session_id=check_session_ref(session_id), to_message_id=to,
                                          through_message_id=through))

    def restore_rewound(self, session_id: str) -> int:
        return self._open().write(partial(lineage.restore_rewound, session_id=check_session_ref(session_id)))

    def branch(self, session_id: str, at_message_id: int, *, title: str | None = None) -> Session:
        now = self._clock()
        values = {"id": new_session_id(now), "title": clean_title(title), "started_at": now}
        at = check_nonnegative(at_message_id, "at_message_id")
        return self._open().write(partial(lineage.branch, session_id=check_session_ref(session_id), at_message_id=at,
                                          values=values))

    # --- usage, search, statistics, integrity --------------------------------------------

    def record_usage(
        self,
        session_id: str,
        *,
        model: str,
        provider: str = "",
        task: str = "",
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
        cost_usd: float = 0.0,
        calls: int = 1,
    ) -> None:
        tokens = {
            "input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_tokens": cache_read_tokens,
            "cache_write_tokens": cache_write_tokens, "reasoning_tokens": reasoning_tokens,
        }
        amounts: dict[str, float] = {name: check_count(value, name) for name, value in tokens.items()}
        amounts["cost_usd"] = check_cost(cost_usd)
        command = cmd.RecordUsage(
            check_session_ref(session_id), check_label(model, "model", required=True),
            check_label(provider, "provider") or "", check_label(task, "task") or "", amounts,
            check_count(calls, "calls", least=1))
        backend = self._open()
        # The call's id is minted here, once: every run of the unit of work carries the same.
        backend.write(partial(usage.record, command=command, call_id=new_uid(), clock=self._clock,
                              keep=usage.keep_for(getattr(backend, "patience", 0.0))))

    def usage(self, session_id: str) -> Usage:
        return self._open().read(partial(usage.total, session_id=check_session_ref(session_id)))

    def search(
        self,
        query: str,
        *,
        profile: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        include_tools: bool = False,
        limit: int = 20,
        substring: bool = False,
        include_reasoning: bool = False,
        conversation: bool = False,
    ) -> list[SearchHit]:
        if not isinstance(query, str):
            raise InvalidInput(f"the search query must be text, not {type(query).__name__}")
        check_unicode(query, "the search query")
        if len(query) > search_query.MAX_QUERY_LENGTH:
            raise InvalidInput(f"the search query is {len(query):,} characters; the limit is "
                               f"{search_query.MAX_QUERY_LENGTH:,}: search for a few of its words")
        parsed = search_query.parse(query, substring=check_flag(substring, "substring"))
        if parsed.substring and parsed.given > search_query.MAX_SUBSTRING_TERMS:
            raise InvalidInput(f"a substring search takes at most {search_query.MAX_SUBSTRING_TERMS} terms, "
                               f"and this one has {parsed.given}: search for fewer of its words")
        return self._open().search(self._scoped(_searching(
            parsed, profile=profile, source=source, user_id=user_id, session_id=session_id, role=role, since=since,
            until=until, include_tools=include_tools, include_reasoning=include_reasoning, limit=limit), conversation))

    def recall(
        self,
        text: str,
        *,
        profile: str | None = None,
        source: str | None = None,
        user_id: str | None = None,
        session_id: str | None = None,
        role: str | None = None,
        since: float | None = None,
        until: float | None = None,
        include_tools: bool = False,
        limit: int = 20,
        conversation: bool = False,
    ) -> list[SearchHit]:
        if not isinstance(text, str):
            raise InvalidInput(f"the question must be text, not {type(text).__name__}")
        text = text[:search_query.MAX_QUERY_LENGTH]
        question, why = questions.question(text), NO_EMBEDDER
        if self._embedder is not None:
            try:
                meaning = embedding.vectors(self._embedder, [text])[0]
            except embedding.EmbedderFailed as exc:
                why = f"{exc}: recall is lexical"
            else:
                question, why = replace(question, meaning=meaning, space=embedding.Space.of(self._embedder).key), None
        hits = self._open().recall(self._scoped(_searching(
            question, profile=profile, source=source, user_id=user_id, session_id=session_id, role=role, since=since,
            until=until, include_tools=include_tools, limit=limit), conversation))
        return hits if why is None else [replace(hit, note=why) for hit in hits]

    def _scoped(self, command: cmd.Search, conversation: Any) -> cmd.Search:
        """A search or recall (its filters checked) over the one session it names or, with
        `conversation`, every session of that session's compression tree as it is when the
        search begins. A session not stored has no messages to find, whichever is asked."""
        if not check_flag(conversation, "conversation"):
            return command
        if command.session_ids is None:
            raise InvalidInput("conversation=True searches the conversation of a session: name it with session_id")
        named = command.session_ids[0]
        try:
            return replace(command, session_ids=tuple(self._open().read(partial(lineage.conversation,
                                                                                 session_id=named))))
        except NotFound:
            return command

    def rebuild_vectors(self) -> int:
        if self._embedder is None:
            raise InvalidInput("rebuilding the vectors needs an embedder: open the store with "
                               "open_store(embedder=...) or set $SESSIONDB_EMBEDDER")
        return self._open().rebuild_vectors()

    def forget(
        self,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        source: str | None = None,
        before: float | None = None,
        dry_run: bool = False,
    ) -> ForgetReceipt:
        command = cmd.Forget(
            user_id=check_label(user_id, "user_id"),
            session_id=None if session_id is None else check_session_ref(session_id),
            source=check_label(source, "source"),
            before=check_timestamp(before, "before"),
            dry_run=check_flag(dry_run, "dry_run"),
        )
        if not command.asked():
            raise InvalidInput("say whose conversations to forget: user_id, session_id, source or before")
        return forgetting.forget(self._open(), command)

    def stats(self) -> StoreStats:
        backend = self._open()
        counts = backend.read(sessions.counts)
        size, wal = backend.footprint()
        return StoreStats(location=backend.location, **counts, size_bytes=size, wal_bytes=wal)

    def verify(self) -> VerifyReport:
        return self._open().check(verify.check)


def _searching(query: search_query.Query | questions.Recall, *, profile: Any, source: Any, user_id: Any,
               session_id: Any, role: str | None, since: Any, until: Any, include_tools: Any, limit: Any,
               include_reasoning: Any = False) -> cmd.Search:
    """A search's (or a recall's) filters, checked, around what it looks for."""
    if role is not None and (not isinstance(role, str) or role not in _ROLES):
        raise InvalidInput(f"role must be one of system, user, assistant, tool (got {role!r})")
    return cmd.Search(
        query=query,
        profile=None if profile is None else homes.validate_profile(profile),
        source=check_label(source, "source"),
        user_id=check_label(user_id, "user_id"),
        session_ids=None if session_id is None else (check_session_ref(session_id),),
        role=role,
        since=check_timestamp(since, "since"),
        until=check_timestamp(until, "until"),
        include_tools=check_flag(include_tools, "include_tools"),
        include_reasoning=check_flag(include_reasoning, "include_reasoning"),
        limit=check_limit(limit),
    )
