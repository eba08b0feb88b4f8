"""LangGraph's checkpoint saver on sessiondb (docs/adapters/langgraph.md).

A thread is a sessiondb session (source "langgraph"); its checkpoints and pending writes
are records appended to it (adapters/langgraph_records.py), idempotent by uid, through
the public Store API only, so it works on every backend and across processes.

Reads walk the session newest first, a page at a time: the latest checkpoint, and the
parent a new checkpoint is written on, are at the end of the session, so the graph's own
reads cost what was written since, not the thread's length. A value a checkpoint shares
with an older one is fetched by that record's message id (one indexed read), archived
or not. Pending writes may land before their checkpoint's record (a graph stores them
concurrently): the walk collects them until the checkpoint before it, and those that
land earlier still are stored again after the record (langgraph_records.Arrivals). A
delta channel's history is one walk back along the parent chain.

`prune` and `delete_for_runs` archive the records they take out in one compaction of
the thread's session: the store never deletes single messages.

A saver built with `user_id=` keeps one person's threads: their sessions are stamped with
the user and named by a digest of the user and the thread id (binding.user_session_id), so
the same thread id under another user's saver is another thread, and listings read the
user's threads alone. The config's `configurable.user_id` does not choose the user: LangGraph
copies it into the checkpoint's metadata for the app's own use, and the thread-level calls
(delete_thread, copy_thread, prune) are given no config.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP, BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple,
    DeltaChannelHistory, get_checkpoint_metadata, writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ..errors import InvalidInput, MessageConflict, NotFound
from ..model import Message
from ..store.aio import AsyncStore
from ..store.contract import Store
from . import langgraph_records as rec
from .binding import BoundToStore, StoreBinding, user_scope, user_session_id

PAGE = 64  # records read per step of a walk through a thread's session


class _OlderParent(Exception):
    """A checkpoint's parent is older than the records `put`'s write was handed. It is then
    looked for page by page outside the write (a stored record never changes), instead of
    in the whole thread read with the store's write lock held."""


class SessiondbSaver(BoundToStore, BaseCheckpointSaver[int]):
    """Checkpoints of LangGraph threads in a sessiondb store, sync and async.

    Built from `store=` (an open Store or AsyncStore, left open) or where to open one
    (`location`, `home=`, `profile=`...), which the saver owns and `close()`s. With
    `user_id`, the threads of that person alone.
    """

    def __init__(self, location: str | os.PathLike[str] | None = None, *, store: Store | AsyncStore | None = None,
                 serde: SerializerProtocol | None = None, user_id: str | None = None, **open_options: Any) -> None:
        super().__init__(serde=serde)
        self.user_id = user_scope(user_id)
        self._binding = StoreBinding(store, location, **open_options)
        self._arrivals = rec.Arrivals()

    # --- writing -------------------------------------------------------------------------

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        thread_id, ns, parent_id = _address(config)
        sid = self._sid(thread_id)

        older: list[rec.Stored | None] = []  # the parent, when it was looked for outside the write

        def record(_root: Any, newest: list[Message], _thread: Any) -> list[dict[str, Any]]:
            parent = older[0] if older else _checkpoint(reversed(newest), ns, parent_id) if parent_id else None
            if parent_id and parent is None and not older and len(newest) == PAGE:
                raise _OlderParent
            return [self._record(ns, parent_id, config, checkpoint, metadata, new_versions, parent)]

        try:  # the parent is nearly always among the newest records
            stored = self.store.extend(sid, record, newest=PAGE, create=self._creation(thread_id))
        except _OlderParent:
            older.append(self._find(sid, ns, parent_id))
            stored = self.store.extend(sid, record, newest=0, create=self._creation(thread_id))
        self._after(sid, self._arrivals.checkpoint((sid, ns, checkpoint["id"]), stored[0].id))
        return _config(thread_id, ns, checkpoint["id"])

    def _record(self, ns: str, parent_id: str | None, config: RunnableConfig, checkpoint: Checkpoint,
                metadata: CheckpointMetadata, new_versions: ChannelVersions,
                parent: rec.Stored | None) -> dict[str, Any]:
        """The message storing `checkpoint` of namespace `ns` (`config` addresses it): its
        values, or where in `parent` (its stored parent checkpoint) the unchanged ones are
        kept already."""
        parent_versions = rec.load(self.serde, parent.part["checkpoint"])["channel_versions"] if parent else {}
        values = checkpoint["channel_values"]
        blobs: dict[str, list[str]] = {}
        refs: dict[str, list[Any]] = {}
        for channel, version in checkpoint["channel_versions"].items():
            shared = None if channel in new_versions or parent is None else parent.reference(
                parent_versions, channel, version)
            if shared is not None:
                refs[channel] = shared
            elif channel in values:
                blobs[channel] = rec.dump(self.serde, values[channel])
        bare = {key: value for key, value in checkpoint.items() if key != "channel_values"}
        part = {"ns": ns, "id": checkpoint["id"], "parent": parent_id, "checkpoint": rec.dump(self.serde, bare),
                "metadata": rec.dump(self.serde, get_checkpoint_metadata(config, metadata)),
                "blobs": blobs, "refs": refs}
        return rec.record_message(rec.checkpoint_uid(ns, checkpoint["id"]), rec.CHECKPOINT, part)

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                   task_path: str = "") -> None:
        thread_id, ns, checkpoint_id = _address(config)
        if not checkpoint_id:
            raise InvalidInput("put_writes needs the checkpoint_id of the checkpoint the writes belong to")
        records = []
        for idx, (channel, value) in enumerate(writes):
            idx = WRITES_IDX_MAP.get(channel, idx)
            typed = rec.dump(self.serde, value)
            part = {"ns": ns, "checkpoint_id": checkpoint_id, "task_id": task_id, "task_path": task_path,
                    "idx": idx, "channel": channel, "value": typed}
            records.append(rec.record_message(rec.write_uid(ns, checkpoint_id, task_id, idx, tuple(typed)),
                                              rec.WRITE, part))
        if not records:
            return
        sid = self._sid(thread_id)
        try:
            landed = [*zip(self.store.extend(sid, lambda *_: records, newest=0, create=self._creation(thread_id)),
                           records)]
        except MessageConflict:
            # A task's write stored before with another value: the first stays, as in every
            # saver of this SDK, and the others of the batch are stored.
            landed = []
            for record in records:
                try:
                    landed.append((self.store.append(sid, record)[0], record))
                except MessageConflict:
                    pass
        self._after(sid, self._arrivals.writes((sid, ns, checkpoint_id), [(row.id, record) for row, record in landed]))

    def _after(self, sid: str, early: list[dict[str, Any]]) -> None:
        """Store again, after their checkpoint's record, writes that landed before it (Arrivals)."""
        if early:
            self.store.append(sid, [rec.again(record) for record in early])

    def delete_thread(self, thread_id: str) -> None:
        try:
            self.store.delete_session(self._sid(thread_id))
        except NotFound:
            pass

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of a thread to another, oldest first (again: nothing twice)."""
        source = self._sid(source_thread_id)
        try:
            self.store.get_session(source)
        except NotFound:
            return
        target = self._session(target_thread_id)
        moved: dict[str, int] = {}  # record uid -> its message id in the target
        after = None
        while page := self.store.transcript(source, after=after, limit=PAGE):
            after = page[-1].id
            for message in page:
                part = rec.part_of(message)
                if part is None:
                    continue
                if "refs" in part:
                    part = self._rehomed(source, part, moved)
                stored = self.store.append(target, rec.record_message(message.uid, message.display_kind, part))
                moved[message.uid] = stored[0].id

    def _rehomed(self, source: str, part: dict[str, Any], moved: Mapping[str, int]) -> dict[str, Any]:
        """A checkpoint record as its copy keeps it: a shared value lives at the copy of its
        record, or inline when that record was not copied (archived by a prune)."""
        blobs, refs = dict(part["blobs"]), {}
        for channel, (uid, at) in part["refs"].items():
            if uid in moved:
                refs[channel] = [uid, moved[uid]]
            else:
                blobs[channel] = self._fetch(source, uid, at)["blobs"][channel]
        return {**part, "blobs": blobs, "refs": refs}

    # --- pruning: archived in one compaction of the thread's session -----------------------

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """`keep_latest`: archive every checkpoint of the threads but the latest of each
        namespace (with its writes, and the ancestors its delta channels are rebuilt from);
        `delete`: delete the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInput(f"prune's strategy is 'keep_latest' or 'delete', not {strategy!r}")
        for thread_id in thread_ids:
            if strategy == "delete":
                self.delete_thread(thread_id)
            else:
                sid = self._sid(thread_id)
                self._archive(sid, lambda upto: self._latest_only(sid, upto), {"strategy": strategy})

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Archive the checkpoints the runs made (their metadata's `run_id`), with their
        writes, in every thread of the store: a walk of every thread."""
        runs = {str(run_id) for run_id in run_ids}
        if not runs:
            return
        for thread_id in [*self._threads()]:
            sid = self._sid(thread_id)
            self._archive(sid, lambda upto: self._without_runs(sid, runs, upto), {"run_ids": sorted(runs)})

    def _archive(self, sid: str, keep: Callable[[int | None], list[Message] | None], note: dict[str, Any]) -> None:
        """Archive the thread's records that `keep` leaves out, in one compaction of its session.

        `keep(upto)` returns the records to keep of those up to message id `upto` (all: None),
        oldest first, or None when it would keep them all. The store never deletes single
        messages: a compaction archives them (they leave every read at once) and is atomic,
        and what is appended meanwhile, above the lease's watermark, stays as it is. The
        records kept are moved after a marker that says what was archived, which renumbers
        them: one whose values others refer to (by message id) is kept as a copy instead,
        its record archived where it is (_in_place)."""
        if keep(None) is None:  # nothing to archive: no lease, no write
            return
        try:
            lease = self.store.begin_compaction(sid, holder="langgraph saver")
        except NotFound:
            return
        try:
            kept = keep(lease.watermark)
            if kept is None:
                self.store.abort_compaction(lease)
                return
            marker = rec.record_message(f"lg-archived:{uuid.uuid4().hex}", rec.ARCHIVED, note)
            self.store.commit_compaction(lease, [marker, *_in_place(kept)])
        except BaseException:
            self.store.abort_compaction(lease)
            raise

    def _latest_only(self, sid: str, upto: int | None) -> list[Message] | None:
        records = [*self._walk(sid, before=None if upto is None else upto + 1)]
        kept: set[tuple[str, str]] = set()
        namespaces: set[str] = set()
        for _, part in records:  # newest first: the first checkpoint of a namespace is its latest
            if part["type"] == rec.CHECKPOINT and part["ns"] not in namespaces:
                namespaces.add(part["ns"])
                kept.add((part["ns"], part["id"]))
                kept.update((part["ns"], found.part["id"]) for found, _ in self._delta_chain(sid, part, upto))
        return _survivors(records, kept.__contains__)

    def _delta_chain(self, sid: str, part: dict[str, Any], upto: int | None) -> list[tuple[rec.Stored, frozenset[str]]]:
        """The ancestors a checkpoint's delta channels are rebuilt from (LangGraph counts the
        updates since each one's snapshot in the metadata)."""
        counters = rec.load(self.serde, part["metadata"]).get("counters_since_delta_snapshot") or {}
        channels = [ch for ch in counters if not _holds(part, ch)]
        if not channels:
            return []
        return self._chain(sid, part["ns"], part["id"], channels, before=None if upto is None else upto + 1)[0]

    def _without_runs(self, sid: str, runs: set[str], upto: int | None) -> list[Message] | None:
        records = [*self._walk(sid, before=None if upto is None else upto + 1)]
        doomed = {(part["ns"], part["id"]) for _, part in records if part["type"] == rec.CHECKPOINT
                  and rec.load(self.serde, part["metadata"]).get("run_id") in runs}
        if not doomed:
            return None
        return _survivors(records, lambda owner: owner not in doomed)

    # --- reading -------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns, checkpoint_id = _address(config)
        sid = self._sid(thread_id)
        writes: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        found: rec.Stored | None = None
        for message, part in self._walk(sid):
            if part["ns"] != ns:
                continue
            if part["type"] == rec.WRITE:
                if checkpoint_id is None or part["checkpoint_id"] == checkpoint_id:
                    _collect(writes, part)
            elif found is not None:
                break  # the checkpoint before it: every write of it has been seen
            elif checkpoint_id is None or part["id"] == checkpoint_id:
                found = rec.Stored(message.uid, message.id, part)
        if found is None:
            return None
        return self._tuple(sid, thread_id, found, writes.get(found.part["id"], {}), {})

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None) -> Iterator[CheckpointTuple]:
        if limit is not None and limit <= 0:
            return
        conf = (config or {}).get("configurable", {})
        ns_wanted, id_wanted = conf.get("checkpoint_ns"), conf.get("checkpoint_id")
        before_id = (before or {}).get("configurable", {}).get("checkpoint_id")
        threads = [conf["thread_id"]] if conf.get("thread_id") is not None else self._threads()
        for thread_id in threads:
            for tup in self._thread_tuples(thread_id, ns_wanted):
                cid = tup.checkpoint["id"]
                if (id_wanted and cid != id_wanted) or (before_id and cid >= before_id):
                    continue
                if filter and not all(tup.metadata.get(k) == v for k, v in filter.items()):
                    continue
                yield tup
                if limit is not None:
                    limit -= 1
                    if limit <= 0:
                        return

    def _thread_tuples(self, thread_id: str, ns_wanted: str | None) -> Iterator[CheckpointTuple]:
        """The thread's checkpoints, newest first, each once all its writes have been seen."""
        sid = self._sid(thread_id)
        writes: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        waiting: dict[str, rec.Stored] = {}  # per namespace: the checkpoint whose older writes may follow
        shared: dict[str, Any] = {}
        for message, part in self._walk(sid):
            if ns_wanted is not None and part["ns"] != ns_wanted:
                continue
            if part["type"] == rec.WRITE:
                _collect(writes, part)
                continue
            if (done := waiting.pop(part["ns"], None)) is not None:
                yield self._tuple(sid, thread_id, done, writes.pop(done.part["id"], {}), shared)
            waiting[part["ns"]] = rec.Stored(message.uid, message.id, part)
        for done in waiting.values():
            yield self._tuple(sid, thread_id, done, writes.pop(done.part["id"], {}), shared)

    def _tuple(self, sid: str, thread_id: str, found: rec.Stored, writes: dict[tuple[str, int], dict[str, Any]],
               shared: dict[str, Any]) -> CheckpointTuple:
        part, ns = found.part, found.part["ns"]
        return CheckpointTuple(
            config=_config(thread_id, ns, part["id"]),
            checkpoint={**rec.load(self.serde, part["checkpoint"]), "channel_values": self._values(sid, found, shared)},
            metadata=rec.load(self.serde, part["metadata"]),
            parent_config=_config(thread_id, ns, part["parent"]) if part["parent"] else None,
            pending_writes=[(w["task_id"], w["channel"], rec.load(self.serde, w["value"])) for w in _ordered(writes)],
        )

    def _values(self, sid: str, found: rec.Stored, shared: dict[str, Any],
                channels: Sequence[str] | None = None) -> dict[str, Any]:
        """A checkpoint's channel values (only `channels`, if given); `shared` caches the
        records holding referenced values, by uid."""
        part = found.part
        values = {ch: rec.load(self.serde, typed) for ch, typed in part["blobs"].items()
                  if channels is None or ch in channels}
        for channel, (uid, message_id) in part["refs"].items():
            if channels is None or channel in channels:
                holder = shared.get(uid) or self._fetch(sid, uid, message_id)
                shared[uid] = holder
                values[channel] = rec.load(self.serde, holder["blobs"][channel])
        return values

    def get_delta_channel_history(self, *, config: RunnableConfig,
                                  channels: Sequence[str]) -> Mapping[str, DeltaChannelHistory]:
        """Per delta channel: the writes of the checkpoint's ancestors, oldest first, back to
        the nearest one that holds a value of the channel (the seed; its own writes included).

        One walk of the thread from its end for every channel (the base class reads each
        ancestor with get_tuple, a walk each)."""
        if not channels:
            return {}
        thread_id, ns, checkpoint_id = _address(config)
        sid = self._sid(thread_id)
        members, writes = self._chain(sid, ns, checkpoint_id, channels)
        history: dict[str, DeltaChannelHistory] = {ch: {"writes": []} for ch in channels}
        shared: dict[str, Any] = {}
        for found, collecting in reversed(members):  # oldest first
            seeded = [ch for ch in collecting if _holds(found.part, ch)]
            for channel, value in self._values(sid, found, shared, seeded).items():
                history[channel]["seed"] = value
            for w in _ordered(writes.get(found.part["id"], {})):
                if w["channel"] in collecting:
                    value = rec.load(self.serde, w["value"])
                    history[w["channel"]]["writes"].append((w["task_id"], w["channel"], value))
        return history

    def _chain(self, sid: str, ns: str, checkpoint_id: str | None, channels: Sequence[str], *,
               before: int | None = None) -> tuple[list[tuple[rec.Stored, frozenset[str]]], dict[str, Any]]:
        """The ancestors of a checkpoint (the latest: None) on its parent chain, newest first,
        each with the channels still collecting writes there; the walk stops, per channel, at
        the first that holds a value of it. With the writes seen on the way, by checkpoint id."""
        remaining = set(channels)
        writes: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        members: list[tuple[rec.Stored, frozenset[str]]] = []
        wanted, at_target, done = checkpoint_id, True, False
        for message, part in self._walk(sid, before=before):
            if part["ns"] != ns:
                continue
            if part["type"] == rec.WRITE:
                _collect(writes, part)
                continue
            if done:
                break  # the checkpoint before the last one needed: every write of that one has been seen
            if wanted is not None and part["id"] != wanted:
                continue
            if not at_target:
                members.append((rec.Stored(message.uid, message.id, part), frozenset(remaining)))
                remaining -= {ch for ch in remaining if _holds(part, ch)}
            at_target, wanted = False, part["parent"]
            done = wanted is None or not remaining
        return members, writes

    def _fetch(self, sid: str, uid: str, message_id: int) -> dict[str, Any]:
        """The record `uid`, read at its message id, archived or not (an archived record still
        holds the values the checkpoints kept after it share); walked to when the id changed
        (a copy of the thread, or a record appended while a prune ran, which renumbers it)."""
        found = self.store.transcript(sid, after=message_id - 1, limit=1, include_compacted=True)
        if found and found[0].uid == uid and (part := rec.part_of(found[0])) is not None:
            return part
        for message, part in self._walk(sid, archived=True):
            if message.uid == uid:
                return part
        raise NotFound(f"the checkpoint record {uid} of session {sid} is not stored; the thread is incomplete")

    def _find(self, sid: str, ns: str, checkpoint_id: str) -> rec.Stored | None:
        """Checkpoint `checkpoint_id` of namespace `ns`, among the thread's live records."""
        return _checkpoint((message for message, _part in self._walk(sid)), ns, checkpoint_id)

    def _walk(self, sid: str, *, before: int | None = None,
              archived: bool = False) -> Iterator[tuple[Message, dict[str, Any]]]:
        """The records of a thread's session, newest first (below message id `before`; those
        a prune archived too, if `archived`)."""
        while True:
            try:
                page = self.store.transcript(sid, order="desc", limit=PAGE, before=before, include_compacted=archived)
            except NotFound:
                return
            for message in page:
                if (part := rec.part_of(message)) is not None:
                    yield message, part
            if len(page) < PAGE:
                return
            before = page[-1].id

    def _sid(self, thread_id: Any) -> str:
        """The session a thread is kept in (langgraph_records.session_id_of), or a user's."""
        if self.user_id is None:
            return rec.session_id_of(thread_id)
        return user_session_id(rec.SOURCE, self.user_id, str(thread_id))

    def _session(self, thread_id: Any) -> str:
        """The thread's session, created the first time (a copy's target)."""
        sid = self._sid(thread_id)
        self._ensure_session(sid, **self._creation(thread_id))
        return sid

    def _creation(self, thread_id: Any) -> dict[str, Any]:
        """The thread's session as a write creates it the first time (Store.extend's `create`)."""
        label = str(thread_id)
        return {"source": rec.SOURCE, "metadata": {"thread_id": label},
                "thread_id": label if len(label) <= 200 else None, "user_id": self.user_id}

    def _threads(self) -> Iterator[str]:
        """This saver's threads: of its user when it has one, and only the sessions their
        thread id names here (not another user's thread, nor a copy of a thread's session)."""
        cursor = None
        while True:
            page = self.store.list_sessions(source=rec.SOURCE, user_id=self.user_id, include_archived=True,
                                            include_hidden=True, limit=200, cursor=cursor)
            for session in page.items:
                if "thread_id" in session.metadata and session.id == self._sid(session.metadata["thread_id"]):
                    yield session.metadata["thread_id"]
            if not (cursor := page.cursor):
                return

    # --- the async twins: the same calls on a worker thread, so the loop never blocks ------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        found = await asyncio.to_thread(lambda: [*self.list(config, filter=filter, before=before, limit=limit)])
        for tup in found:
            yield tup

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def aget_delta_channel_history(self, *, config: RunnableConfig,
                                         channels: Sequence[str]) -> Mapping[str, DeltaChannelHistory]:
        return await asyncio.to_thread(lambda: self.get_delta_channel_history(config=config, channels=channels))


def _address(config: RunnableConfig) -> tuple[str, str, str | None]:
    conf = config.get("configurable") or {}
    if conf.get("thread_id") is None:
        raise InvalidInput("a checkpoint's config needs configurable.thread_id")
    return str(conf["thread_id"]), conf.get("checkpoint_ns", "") or "", conf.get("checkpoint_id")


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def _ordered(writes: Mapping[tuple[str, int], dict[str, Any]]) -> list[dict[str, Any]]:
    """A checkpoint's writes in the order a super-step applies them (writes_sort_key)."""
    return sorted(writes.values(), key=lambda w: writes_sort_key(w["task_path"], w["task_id"], w["idx"]))


def _checkpoint(messages: Iterable[Message], ns: str, checkpoint_id: str) -> rec.Stored | None:
    """The first record of `messages` that is checkpoint `checkpoint_id` of namespace `ns`."""
    for message in messages:
        part = rec.part_of(message)
        if part is not None and part["type"] == rec.CHECKPOINT and part["ns"] == ns and part["id"] == checkpoint_id:
            return rec.Stored(message.uid, message.id, part)
    return None


def _holds(part: dict[str, Any], channel: str) -> bool:
    """Whether a checkpoint record holds a value of `channel` (inline or by reference)."""
    return channel in part["blobs"] or channel in part["refs"]


def _survivors(records: list[tuple[Message, dict[str, Any]]],
               keeps: Callable[[tuple[str, str]], bool]) -> list[Message] | None:
    """Of a thread's records (newest first), those of the checkpoints `keeps`, oldest first:
    a checkpoint's record and its writes. None when that is all of them."""
    kept = [message for message, part in reversed(records)
            if keeps((part["ns"], part["id"] if part["type"] == rec.CHECKPOINT else part["checkpoint_id"]))]
    return kept if len(kept) < len(records) else None


def _in_place(kept: list[Message]) -> list[Message | dict[str, Any]]:
    """The records a compaction keeps: each as it is, but a copy (a uid of its own) of one
    whose values a kept record refers to, so the reference still finds them, archived, at
    the message id it names."""
    referenced = {uid for message in kept for uid, _ in (rec.part_of(message) or {}).get("refs", {}).values()}
    return [rec.record_message(f"lg-kept:{uuid.uuid4().hex}", message.display_kind, rec.part_of(message))
            if message.uid in referenced else message for message in kept]


def _collect(writes: dict[str, dict[tuple[str, int], dict[str, Any]]], part: dict[str, Any]) -> None:
    """Keep a write under its checkpoint; the walk is newest first, so the first seen of a
    (task, idx) is the one that stands."""
    writes.setdefault(part["checkpoint_id"], {}).setdefault((part["task_id"], part["idx"]), part)

