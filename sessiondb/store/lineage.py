"""Lineage: how sessions continue one another, and the reads and writes that follow it, on every backend.

A session rotated by a compaction ends with reason 'compression' and is continued by a
child whose `parent_relation` is 'compression'. Those children form one conversation;
branches, resets and delegations are other relations and are never followed.

- The tip: `resolve` walks the compression subtree below a session. Among several leaves
  (a parent reopened and rotated again), a live one (not ended) wins, then one ended for
  another reason, then one closed by compression (a dead end); then the newest by start,
  then the larger id.
- Late writes (`land`): a write addressed to a rotated session lands on the tip only while
  the tip is live (S-05 fails closed). The session a write lands on is judged after its
  row is locked, since a rotation may close the tip between choosing it and locking it,
  and a row written there would be acknowledged into a session nobody resumes (S-46).
- Appends (`append`): a batch lands by that rule, its uids stored once, its seq numbers
  and the session's counters following on (the section's comment says how).
- A uid stored anywhere up the chain is stored once (S-01 across rotations): `by_uids`
  finds it, and the append returns the stored row instead of writing a copy.
- Flags apply to the whole conversation (S-41); rewind/restore mark messages `rewound`
  and back; branch starts a new session from copies of another's messages; the reads of
  a conversation (transcript, the tip's live messages, the whole lineage's, resume's rows).

Every function is a unit of work over `Rows` (store/rows.py): the same on every backend.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from ..errors import (
    CompressionClosed, InvalidInput, MessageConflict, NotFound, SessionExists, SessionTooLarge, StorageError,
)
from ..inputs import NewMessage, child_session
from ..model import (
    BRANCH, COMPRESSION, INTERNAL_NOTIFICATION, MAX_HOPS, Message, MessageState, ModelMessage, Role,
    Session, is_activity, message_of,
)
from . import sessions
from .commands import PatchMetadata, SetFlags
from .rows import Row, Rows, above, at_most, below, one_of
from .sql import add_to_session

#: Tips a write follows at most: each new one means a rotation committed while the write
#: was on its way, so a write that keeps missing is refused rather than chasing forever.
MAX_LANDINGS = 16
#: uids (or ids) one condition names at most (far below every engine's limit on bound values).
CHUNK = 500
_ACTIVE = MessageState.ACTIVE.value
_LEAF = ("id", "parent_session_id", "end_reason", "ended_at", "started_at")


# --- message rows --------------------------------------------------------------------------


def message(row: Row) -> Message:
    """A stored message row as the Message a caller gets (JSON columns parsed)."""
    parts, tool_calls = row["parts"], row["tool_calls"]
    return message_of((
        row["id"], row["session_id"], row["uid"], row["seq"], row["role"],
        json.loads(parts) if parts is not None else row["content"],
        json.loads(tool_calls) if tool_calls is not None else None,
        row["tool_call_id"], row["tool_name"], row["reasoning"], row["finish_reason"], row["token_count"],
        row["timestamp"], row["display_kind"], row["state"],
    ))


def get_many(rows: Rows, message_ids: list[int]) -> dict[int, Message]:
    """The messages of `message_ids` that are stored and not rewound, by id in the order
    asked; one statement."""
    found = {row["id"]: row for row in rows.select(
        "messages", {"id": one_of(message_ids), "state": one_of((_ACTIVE, MessageState.COMPACTED.value))})
    } if message_ids else {}
    return {mid: message(found[mid]) for mid in message_ids if mid in found}


def by_uids(rows: Rows, session_ids: Sequence[str], uids: Sequence[str]) -> dict[str, Message]:
    """The rows with these uids stored in these sessions, by uid (the first session listed wins)."""
    found: dict[str, Message] = {}
    if not session_ids or not uids:
        return found
    rank = {sid: i for i, sid in enumerate(session_ids)}
    unique = list(dict.fromkeys(uids))
    where: dict[str, Any] = {"session_id": session_ids[0] if len(session_ids) == 1 else one_of(session_ids)}
    for i in range(0, len(unique), CHUNK):
        for row in rows.select("messages", {**where, "uid": one_of(unique[i:i + CHUNK])}):
            m = message(row)
            if m.uid not in found or rank[m.session_id] < rank[found[m.uid].session_id]:
                found[m.uid] = m
    return found


def insert_messages(rows: Rows, new: Sequence[Row], *, skip_taken: bool = False) -> list[int | None]:
    """Insert message rows in order, a bounded number per statement; their ids (see Rows.insert)."""
    ids: list[int | None] = []
    for i in range(0, len(new), CHUNK):
        ids.extend(rows.insert("messages", new[i:i + CHUNK], skip_taken=skip_taken))
    return ids


def recount(rows: Rows, session_id: str) -> None:
    """Set a session's message and tool-call counts from its active rows (not its activity)."""
    active = rows.select("messages", {"session_id": session_id, "state": _ACTIVE}, columns=("tool_calls",))
    calls = sum(len(json.loads(r["tool_calls"])) for r in active if r["tool_calls"] is not None)
    rows.update("sessions", {"id": session_id}, set={"message_count": len(active), "tool_call_count": calls})


# --- following the chain -------------------------------------------------------------------


class Head(NamedTuple):
    """A session's row as its lock read it: how it ended, how it continues its parent,
    and the seq of its newest message (0 without one)."""

    end_reason: str | None
    ended_at: float | None
    parent_relation: str | None
    last_seq: int


@dataclass(frozen=True)
class Leaf:
    """A member of the subtree with no compression child, and how it ended."""

    id: str
    end_reason: str | None
    ended_at: float | None
    started_at: float

    @property
    def live(self) -> bool:
        return self.ended_at is None


def _too_long(session_id: str) -> StorageError:
    return StorageError(f"the lineage of session {session_id} runs past {MAX_HOPS} sessions; it cannot be followed")


def ancestors(rows: Rows, session_id: str) -> list[str]:
    """The compression ancestors of a session, nearest first."""
    found = rows.select("sessions", {"id": session_id}, columns=("parent_session_id", "parent_relation"))
    if not found:
        raise sessions.missing(session_id)
    out: list[str] = []
    row = found[0]
    while row["parent_relation"] == COMPRESSION and row["parent_session_id"] is not None:
        parent = row["parent_session_id"]
        if parent == session_id or parent in out:
            break  # a cycle (only a hand-edited store has one): the chain ends here
        up = rows.select("sessions", {"id": parent}, columns=("parent_session_id", "parent_relation"))
        if not up:
            break
        out.append(parent)
        if len(out) > MAX_HOPS:
            raise _too_long(session_id)
        row = up[0]
    return out


def _subtree(rows: Rows, session_id: str) -> tuple[dict[str, str | None], list[Leaf]]:
    """The compression subtree below `session_id`: whom each member came from, and its leaves
    (members without a compression child not visited before)."""
    found = rows.select("sessions", {"id": session_id}, columns=_LEAF)
    if not found:
        raise sessions.missing(session_id)
    came_from: dict[str, str | None] = {session_id: None}
    level = {session_id: found[0]}
    leaves: list[Leaf] = []
    while level:
        children = rows.select("sessions", {"parent_session_id": one_of(level), "parent_relation": COMPRESSION},
                               columns=_LEAF)
        parents: set[str] = set()
        below: dict[str, Row] = {}
        for child in children:
            if child["id"] in came_from:
                continue
            came_from[child["id"]] = child["parent_session_id"]
            parents.add(child["parent_session_id"])
            below[child["id"]] = child
            if len(came_from) > MAX_HOPS:
                raise _too_long(session_id)
        leaves.extend(Leaf(sid, r["end_reason"], r["ended_at"], r["started_at"])
                      for sid, r in level.items() if sid not in parents)
        level = below
    return came_from, leaves


def _rank(leaf: Leaf) -> tuple[int, float, str]:
    standing = 0 if leaf.live else (2 if leaf.end_reason == COMPRESSION else 1)
    return -standing, leaf.started_at, leaf.id


def resolve(rows: Rows, session_id: str) -> tuple[list[str], Leaf]:
    """The path from `session_id` down to its tip, and the tip's leaf."""
    came_from, leaves = _subtree(rows, session_id)
    tip_leaf = max(leaves, key=_rank)
    path = [tip_leaf.id]
    while came_from[path[-1]] is not None:
        path.append(came_from[path[-1]])  # type: ignore[arg-type]
    path.reverse()
    return path, tip_leaf


def tip(rows: Rows, session_id: str) -> Session:
    path, _ = resolve(rows, session_id)
    return sessions.get(rows, path[-1])


def lineage(rows: Rows, session_id: str) -> list[Session]:
    """The compression chain through `session_id`: root first, tip last."""
    path, _ = resolve(rows, session_id)
    return [sessions.get(rows, sid) for sid in [*reversed(ancestors(rows, session_id)), *path]]


def lock(rows: Rows, session_id: str) -> Head:
    """Lock the session's row for this transaction and read its head.

    A lock that waited reads the row as its previous holder committed it (a rotation's
    end included). The last seq is read after the lock is held, by a read of its own: one
    that waited for the lock may still see the snapshot it started with, which would not
    show the messages the previous holder just committed."""
    found = rows.select("sessions", {"id": session_id}, columns=("end_reason", "ended_at", "parent_relation"),
                        lock=True)
    if not found:
        raise sessions.missing(session_id)
    last = rows.select("messages", {"session_id": session_id}, columns=("seq",), order=("-id",), limit=1)
    row = found[0]
    return Head(row["end_reason"], row["ended_at"], row["parent_relation"], last[0]["seq"] if last else 0)


def closed(session_id: str, tip_leaf: Leaf) -> CompressionClosed:
    """The refusal of a write to rotated `session_id` whose tip is not live."""
    ended = ("no live session continues it" if tip_leaf.end_reason == COMPRESSION else
             f"the session continuing it, {tip_leaf.id}, has since ended (reason {tip_leaf.end_reason!r})")
    return CompressionClosed(
        f"session {session_id} was closed when a compaction rotated it into a new session, and "
        f"{ended}. Nothing was written: refresh the session (reload it, or start a new one) and "
        "write there")


def land(rows: Rows, session_id: str, *, ended: bool = False) -> tuple[str, Head]:
    """The session a write addressed to `session_id` lands on, locked, and its head (`follow`)."""
    return follow(session_id, lambda sid: lock(rows, sid), lambda sid: resolve(rows, sid), ended=ended)


def follow(session_id: str, lock: Callable[[str], Head],
           resolve: Callable[[str], tuple[list[str], Leaf]], *, ended: bool = False) -> tuple[str, Head]:
    """The rule of `land` on its two reads: `lock` a session's row and read its head,
    `resolve` the path to the tip.

    The addressed session takes the write unless a compaction rotated it; then its live tip
    does, judged again once locked: a tip that ended meanwhile is left for the one that
    continues it now, or the write is refused (`closed`) when none is live. With `ended`, a
    tip that ended for another reason than a rotation takes the write too: a rewind stores
    nothing a reader could miss, and the conversation's reads show that session.
    """
    target = session_id
    for _ in range(MAX_LANDINGS):
        head = lock(target)
        if (head.end_reason != COMPRESSION) if target == session_id or ended else (head.ended_at is None):
            return target, head
        path, tip_leaf = resolve(session_id)
        if tip_leaf.end_reason == COMPRESSION or not (ended or tip_leaf.live):
            raise closed(session_id, tip_leaf)
        target = path[-1]
    raise CompressionClosed(
        f"session {session_id} was rotated into a new session {MAX_LANDINGS} times while this write "
        "followed it, so it landed nowhere. Nothing was written: refresh the session (reload it) and "
        "write there")


def stored_earlier(rows: Rows, session_id: str, batch: Sequence[NewMessage]) -> dict[int, Message]:
    """The messages of `batch` whose uid a compression ancestor of `session_id` stores
    already, by their index in the batch: the stored rows, to return instead of writing a
    copy (S-01 across rotations). A uid stored there with other content is refused."""
    earlier = by_uids(rows, ancestors(rows, session_id), [m.uid for m in batch])
    kept: dict[int, Message] = {}
    for index, m in enumerate(batch):
        found = earlier.get(m.uid)
        if found is not None:
            if not m.same_payload(found):
                raise MessageConflict(
                    f"message uid {m.uid!r} is already stored in session {found.session_id} (an earlier "
                    "part of this conversation) with different content; give the new message its own uid")
            kept[index] = found
    return kept


# --- appends ------------------------------------------------------------------------------
#
# One batch is one unit of work, so a batch that fails part-way (a uid conflict, a missing
# session, a closed conversation) leaves no row behind:
# - It lands where `land` says (the addressed session, or the live tip of a rotated one,
#   S-05), with that session's row locked: the appends of one session take turns, so seq
#   numbers follow on without gaps and ids grow in commit order.
# - Every message has an identity (S-01): a uid the session stores already is not written
#   again, its stored row is returned (MessageConflict if the content differs); a uid given
#   twice in a batch is stored once; a uid stored in a compression ancestor of the session
#   is the ancestor's row (`stored_earlier`).
# - The session's counters and activity clock take in the active rows just stored.
# The batch is inserted assuming its uids are new (the common case: one statement); when
# some were stored already (a retried or re-flushed batch), the rows just inserted are
# taken back and the batch is stored again knowing which uids exist, so seq numbers never
# skip. A backend may run appends its own way (backend.AppendingBackend): the public
# append (checked.py) hands it this unit of work with the command.


def append(rows: Rows, session_id: str, batch: Sequence[NewMessage], now: float) -> list[Message]:
    """The append as one unit of work (see the module docstring)."""
    target, head = land(rows, session_id)
    return _append_at(rows, target, head, batch, now)


#: What `extend` hands its caller's `build`: the conversation's root session, the tip's
#: newest live messages, and a reader of the whole lineage's messages (compacted ones too).
Build = Callable[[Session, list[Message], Callable[[], list[Message]]], Sequence[NewMessage]]


def extend(rows: Rows, session_id: str, build: Build, newest: int, creation: dict[str, Any] | None,
           now: float, patch: PatchMetadata | None = None,
           patches: Sequence[tuple[str, PatchMetadata]] = ()) -> list[Message]:
    """Append what `build` makes of the conversation's end, in one unit of work: the
    session `session_id` (created from `creation` if missing, its metadata patched with
    `patch`), its tip's newest `newest` live messages, read with the tip's row locked, so
    what `build` saw is still the end when its messages land after it. Each of `patches`
    (session id, patch), in id order, is merged into another stored session: NotFound for
    one missing, InvalidInput for one of this conversation's own, and nothing written."""
    root = _root(rows, session_id, creation)
    if patches:
        own = set(conversation(rows, session_id)).intersection(other for other, _ in patches)
        if own:  # its rows are locked conversation first, not after it: refused, not left to deadlock
            raise InvalidInput(f"metadata_of names {', '.join(sorted(own))}, a session of the conversation being "
                               "extended; patch the session named by `metadata`, or another conversation's")
    if patch is not None:  # the named session's row locked before the tip's, the order `land` takes them in
        root = sessions.change(rows, root.id, patch)
    target, head = land(rows, session_id)
    for other, other_patch in patches:  # after the conversation's rows, in id order
        sessions.change(rows, other, other_patch)
    batch = build(root, *_end(rows, session_id, target, newest))
    return _append_at(rows, target, head, batch, now) if batch else []


def extend_unlocked(rows: Rows, session_id: str, build: Build, newest: int) -> Sequence[NewMessage]:
    """What `extend` would append to the stored session `session_id`, read in a snapshot
    without writing (a batch the store refused to write is spooled, as an append's is)."""
    return build(sessions.get(rows, session_id), *_end(rows, session_id, resolve(rows, session_id)[0][-1], newest))


def _root(rows: Rows, session_id: str, creation: dict[str, Any] | None) -> Session:
    try:
        return sessions.get(rows, session_id)
    except NotFound:
        if creation is None:
            raise
    try:
        return sessions.create(rows, creation)
    except SessionExists:  # another writer created it since: the conversation is theirs and ours
        return sessions.get(rows, session_id)


def _end(rows: Rows, session_id: str, tip_id: str, newest: int) -> tuple[list[Message], Callable[[], list[Message]]]:
    tail = transcript(rows, tip_id, include_compacted=False, limit=newest, before=None, after=None,
                      order="desc") if newest else []
    return tail[::-1], lambda: [m for s in lineage(rows, session_id)
                                for m in transcript(rows, s.id, include_compacted=True, limit=None, before=None,
                                                    after=None, order="asc")]


def _append_at(rows: Rows, target: str, head: Head, batch: Sequence[NewMessage], now: float) -> list[Message]:
    """Store `batch` in the locked session `target`, whose head is `head`."""
    if head.parent_relation != COMPRESSION:
        return _store(rows, target, batch, now, head.last_seq)  # the common case
    earlier = stored_earlier(rows, target, batch)
    fresh = [m for i, m in enumerate(batch) if i not in earlier]
    stored = iter(_store(rows, target, fresh, now, head.last_seq) if fresh else [])
    return [earlier[i] if i in earlier else next(stored) for i in range(len(batch))]


def new_row(session_id: str, m: NewMessage, seq: int, now: float) -> Row:
    """The row storing `m` as message `seq` of the session (stamped `now` if it has no time)."""
    return {"session_id": session_id, "uid": m.uid, "seq": seq, "role": m.role, "content": m.content,
            "parts": m.parts, "tool_calls": m.tool_calls, "tool_call_id": m.tool_call_id, "tool_name": m.tool_name,
            "reasoning": m.reasoning, "finish_reason": m.finish_reason, "token_count": m.token_count,
            "timestamp": now if m.timestamp is None else m.timestamp, "display_kind": m.display_kind,
            "state": m.state}


def _store(rows: Rows, session_id: str, batch: Sequence[NewMessage], now: float, last_seq: int) -> list[Message]:
    """Store the messages not already stored in the (locked) session; the stored row of each."""
    plan = _plan(session_id, batch, now, last_seq, stored={})
    ids = _insert(rows, plan, skip_taken=True)
    if any(isinstance(item, dict) and mid is None for item, mid in zip(plan, ids)):
        inserted = [i for i in ids if i is not None]
        for start in range(0, len(inserted), CHUNK):
            rows.delete("messages", {"id": one_of(inserted[start:start + CHUNK])})
        stored = by_uids(rows, [session_id], [m.uid for m in batch])
        plan = _plan(session_id, batch, now, last_seq, stored=stored)
        ids = _insert(rows, plan, skip_taken=False)
    out: list[Message] = []
    written: dict[str, Message] = {}
    for m, item, mid in zip(batch, plan, ids):
        if isinstance(item, dict):
            written[m.uid] = message({"id": mid, **item})
            out.append(written[m.uid])
        else:  # stored before, or earlier in this batch
            out.append(_same_or_conflict(m, item if isinstance(item, Message) else written[m.uid], session_id))
    fresh = [(m, item["timestamp"]) for m, item in zip(batch, plan) if isinstance(item, dict)]
    add_to_session(rows, session_id, [m for m, _ in fresh], [time for _, time in fresh])
    return out


def _plan(session_id: str, batch: Sequence[NewMessage], now: float, last_seq: int,
          stored: dict[str, Message]) -> list[Any]:
    """For each message: the row to insert, the stored Message its uid names, or the uid
    itself when an earlier message of the batch has it."""
    plan: list[Any] = []
    seq = last_seq
    seen: set[str] = set()
    for m in batch:
        if m.uid in stored:
            plan.append(stored[m.uid])
        elif m.uid in seen:
            plan.append(m.uid)
        else:
            seen.add(m.uid)
            seq += 1
            plan.append(new_row(session_id, m, seq, now))
    return plan


def _insert(rows: Rows, plan: list[Any], *, skip_taken: bool) -> list[int | None]:
    """Insert the plan's rows; an id (None where the uid was taken) for each item, None for the others."""
    new = [item for item in plan if isinstance(item, dict)]
    ids = iter(insert_messages(rows, new, skip_taken=skip_taken))
    return [next(ids) if isinstance(item, dict) else None for item in plan]


def _same_or_conflict(m: NewMessage, stored: Message, session_id: str) -> Message:
    if not m.same_payload(stored):
        raise MessageConflict(
            f"message uid {m.uid!r} is already stored in session {session_id} with different "
            "content; give the new message its own uid")
    return stored


def conversation(rows: Rows, session_id: str) -> list[str]:
    """Every session of the compression tree `session_id` belongs to: its root and all the
    root's compression descendants."""
    up = ancestors(rows, session_id)
    came_from, _ = _subtree(rows, up[-1] if up else session_id)
    return list(came_from)


def delete_conversation(rows: Rows, session_id: str) -> list[str]:
    """Delete every session of the compression tree `session_id` belongs to, in one unit of
    work: a conversation is never left with its tip gone and its start still there.
    Branches are conversations of their own and stay (parentless).

    The tree is read again once its members are locked, until no rotation added to it: a
    rotation that committed while the first read waited would otherwise leave its new
    session, the conversation's newest messages, behind. Once every member is locked no
    rotation can add one (it locks the session it rotates)."""
    members = conversation(rows, session_id)
    for _ in range(MAX_LANDINGS):
        for sid in members:  # root first, as `land` takes a session and then its tip
            rows.select("sessions", {"id": sid}, columns=("id",), lock=True)
        again = conversation(rows, session_id)
        if again == members:
            return sessions.delete(rows, session_id, together=members)
        members = again
    raise CompressionClosed(f"session {session_id} was rotated into a new session {MAX_LANDINGS} times while its "
                            "conversation was being deleted; nothing was deleted: delete it again")


def set_flags(rows: Rows, session_id: str, change: SetFlags) -> Session:
    """Pin, archive and hide apply to the whole conversation (S-41): every session of its
    compression tree, in this one write, so a listing never shows the ancestors of a
    hidden tip. Not user activity."""
    members = conversation(rows, session_id)
    if change.flags:
        for sid in sorted(members):  # one lock order for every writer of the tree
            rows.update("sessions", {"id": sid}, set={name: int(on) for name, on in change.flags.items()})
    return sessions.get(rows, session_id)


# --- rewind, restore, branch ---------------------------------------------------------------


def _require_message(rows: Rows, session_id: str, message_id: int, *, addressed: str | None = None) -> None:
    """NotFound unless the message is in `session_id`, the session a write `addressed` to
    another landed on (a compaction rotated that one: its messages moved or were archived)."""
    if rows.select("messages", {"id": message_id, "session_id": session_id}, columns=("id",)):
        return
    if addressed in (None, session_id):
        raise NotFound(f"message {message_id} is not in session {session_id}")
    raise NotFound(f"message {message_id} is not in session {session_id}, which continues session {addressed} "
                   "since a compaction rotated it: read the conversation again (transcript(..., tip=True)) and "
                   "name a message of the session it returns")


def rewind(rows: Rows, session_id: str, to_message_id: int, through_message_id: int | None = None) -> int:
    """Mark the active messages after `to_message_id` (up to `through_message_id` when given)
    rewound in the session a write addressed to `session_id` lands on (`land`); how many.

    Landing like every write makes `rewind(session_id, 0)` undo the live conversation in one
    unit of work, whatever rotation committed before it: no caller reads the tip and retries.
    A tip that has ended is rewound too, as it would be addressed by its own id."""
    target, _ = land(rows, session_id, ended=True)
    for bound in (to_message_id, through_message_id):
        if bound:
            _require_message(rows, target, bound, addressed=session_id)
    after = {"session_id": target, "state": _ACTIVE, "id": above(to_message_id)}
    rewound = {"state": MessageState.REWOUND.value}
    if through_message_id is None:
        changed = rows.update("messages", after, set=rewound)
    else:  # the rows up to the upper bound, named: a condition holds one bound a column
        ids = [r["id"] for r in rows.select("messages", after, columns=("id",)) if r["id"] <= through_message_id]
        changed = sum(rows.update("messages", {"id": one_of(ids[i:i + CHUNK])}, set=rewound)
                      for i in range(0, len(ids), CHUNK))
    if changed:
        recount(rows, target)
    return changed


def restore_rewound(rows: Rows, session_id: str) -> int:
    """Make every rewound message of the session a write lands on (`land`) active again; how many."""
    target, _ = land(rows, session_id)
    changed = rows.update("messages", {"session_id": target, "state": MessageState.REWOUND.value},
                          set={"state": _ACTIVE})
    if changed:
        recount(rows, target)
    return changed


#: What a branch's copy of a message keeps: all but its id, session and state.
_COPIED = ("uid", "seq", "role", "content", "parts", "tool_calls", "tool_call_id", "tool_name", "reasoning",
           "finish_reason", "token_count", "timestamp", "display_kind")


def branch(rows: Rows, session_id: str, at_message_id: int, values: dict[str, Any]) -> Session:
    """A new session (relation 'branch') holding copies of the active messages up to the id.

    Copies keep their uid (the branch is another session, so identities do not collide,
    and re-flushing the loaded transcript into the branch stores nothing), seq, payload
    and timestamps; they get new ids. `values` carries the new session's id, start time
    and title.
    """
    source = sessions.get(rows, session_id)
    _require_message(rows, session_id, at_message_id)
    child = child_session(source, BRANCH, **values)
    sessions.create(rows, child)
    copied = rows.select("messages", {"session_id": session_id, "state": _ACTIVE, "id": at_most(at_message_id)},
                         columns=_COPIED, order=("id",))
    insert_messages(rows, [{"session_id": child["id"], **r, "state": _ACTIVE} for r in copied])
    recount(rows, child["id"])
    activity = [r["timestamp"] for r in copied if is_activity(r["role"], r["display_kind"])]
    rows.update("sessions", {"id": child["id"]}, set={"last_activity_at": max(activity) if activity else None})
    return sessions.get(rows, child["id"])


# --- reads ---------------------------------------------------------------------------------


def transcript(rows: Rows, session_id: str, *, include_compacted: bool, limit: int | None,
               before: int | None, after: int | None, order: str, tip: bool = False) -> list[Message]:
    """A session's messages in commit order (or newest first with order='desc'); with `tip`,
    those of the session that continues it now, found in the same snapshot."""
    if tip:
        session_id = resolve(rows, session_id)[0][-1]
    sessions.require(rows, session_id)
    where: dict[str, Any] = {"session_id": session_id,
                             "state": one_of((_ACTIVE, MessageState.COMPACTED.value)) if include_compacted else _ACTIVE}
    # One bound of the id is a condition, the one the reading starts from; the other ends a
    # run already in id order, so it is applied to what was read (the limit counts the same rows).
    start, end = (after, before) if order == "asc" else (before, after)
    if start is not None:
        where["id"] = above(start) if order == "asc" else below(start)
    found = rows.select("messages", where, order=("id" if order == "asc" else "-id",), limit=limit)
    if end is not None:
        found = [r for r in found if (r["id"] < end if order == "asc" else r["id"] > end)]
    return [message(r) for r in found]


def live_messages(rows: Rows, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and all its active messages in order, as stored."""
    path, _ = resolve(rows, session_id)
    return path[-1], [message(r) for r in rows.select("messages", {"session_id": path[-1], "state": _ACTIVE},
                                                         order=("id",))]


def lineage_messages(rows: Rows, session_id: str) -> tuple[str, list[Message]]:
    """The tip's id and every message of the lineage through `session_id`: root first, each
    session's in id order, every state (what flush aligns a conversation with)."""
    path, _ = resolve(rows, session_id)
    chain = [*reversed(ancestors(rows, session_id)), *path]
    return path[-1], [message(r) for sid in chain
                      for r in rows.select("messages", {"session_id": sid}, order=("id",))]


#: What a model is shown of a message (S-09, S-44), and what decides how.
MODEL = ("uid", "role", "content", "parts", "tool_calls", "tool_call_id", "tool_name", "reasoning", "display_kind")


def live_model_messages(rows: Rows, session_id: str, max_messages: int) -> list[ModelMessage]:
    """The tip's active messages in order, as a model takes them; over `max_messages` (0: no
    limit) SessionTooLarge, having read one more than it and counted only then, so the guard
    costs no second pass (S-42)."""
    path, _ = resolve(rows, session_id)
    where = {"session_id": path[-1], "state": _ACTIVE}
    found = rows.select("messages", where, columns=MODEL, order=("id",), limit=max_messages + 1 if max_messages else None)
    out = model_messages(found)
    if max_messages and len(out) > max_messages:
        count = rows.count("messages", where)[None]["count"]
        raise SessionTooLarge(f"session {path[-1]} holds {count:,} active messages",
                              limit=max_messages, count=count, session_id=path[-1])
    return out


def model_messages(found: Sequence[Mapping[str, Any]]) -> list[ModelMessage]:
    """One ModelMessage per row, its keys in the order resume has always given them: an
    internal notification's role is 'user' (S-09), `name` is a tool message's tool, nobody
    else's, and the uid rides along as an attribute."""
    loads, new = json.loads, ModelMessage.__new__
    user, tool = Role.USER.value, Role.TOOL.value
    out: list[ModelMessage] = []
    add = out.append
    for r in found:
        # Filled in place rather than through ModelMessage(fields, uid), whose __init__
        # copies a dict made for it: about 15% of a 20,000-message resume.
        m = new(ModelMessage)
        m.uid = r["uid"]
        role = r["role"]
        m["role"] = user if r["display_kind"] == INTERNAL_NOTIFICATION else role
        parts = r["parts"]
        m["content"] = r["content"] if parts is None else loads(parts)
        if r["tool_calls"] is not None:
            m["tool_calls"] = loads(r["tool_calls"])
        if r["tool_call_id"] is not None:
            m["tool_call_id"] = r["tool_call_id"]
        if role == tool and r["tool_name"] is not None:
            m["name"] = r["tool_name"]
        if r["reasoning"] is not None:
            m["reasoning"] = r["reasoning"]
        add(m)
    return out
