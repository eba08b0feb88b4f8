"""An append on every backend: which session it lands on, what it stores, what it returns.

One batch is one unit of work over `Rows` (store/rows.py), so a batch that fails part-way
(a uid conflict, a missing session, a closed conversation) leaves no row behind:

- It lands where store/lineage.py says (the addressed session, or the live tip of a
  rotated one, S-05), with that session's row locked: the appends of one session take
  turns, so seq numbers follow on without gaps and ids grow in commit order.
- Every message has an identity (S-01): a uid the session stores already is not written
  again, its stored row is returned (MessageConflict if the content differs); a uid
  given twice in a batch is stored once; a uid stored in a compression ancestor of the
  session is the ancestor's row (lineage.stored_earlier).
- The session's counters and activity clock take in the active rows just stored.

The batch is inserted assuming its uids are new (the common case: one statement); when
some were stored already (a retried or re-flushed batch), the rows just inserted are
taken back and the batch is stored again knowing which uids exist, so seq numbers never
skip. `run` is the entry: a backend may run appends its own way (backend.AppendingBackend).
"""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

from ..errors import MessageConflict
from ..inputs import NewMessage
from ..model import COMPRESSION, Message, MessageState
from . import commands as cmd
from . import lineage
from .backend import Backend
from .rows import Row, Rows, one_of

_ACTIVE = MessageState.ACTIVE.value


def run(backend: Backend, command: cmd.Append) -> list[Message]:
    """Store `command` on `backend`: the stored row of each of its messages, in order."""
    work = partial(append, session_id=command.session_id, batch=command.batch, now=command.now)
    # backend.AppendingBackend's method, looked up: a protocol's isinstance costs about
    # 10 µs, a twentieth of a one-message append on SQLite.
    write_append = getattr(backend, "write_append", None)
    return write_append(command, work) if write_append is not None else backend.write(work)


def append(rows: Rows, session_id: str, batch: Sequence[NewMessage], now: float) -> list[Message]:
    """The append as one unit of work (see the module docstring)."""
    target, head = lineage.land(rows, session_id)
    if head.parent_relation != COMPRESSION:
        return _store(rows, target, batch, now, head.last_seq)  # the common case
    earlier = lineage.stored_earlier(rows, target, batch)
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
        for start in range(0, len(inserted), lineage.CHUNK):
            rows.delete("messages", {"id": one_of(inserted[start:start + lineage.CHUNK])})
        stored = lineage.by_uids(rows, [session_id], [m.uid for m in batch])
        plan = _plan(session_id, batch, now, last_seq, stored=stored)
        ids = _insert(rows, plan, skip_taken=False)
    out: list[Message] = []
    written: dict[str, Message] = {}
    added: list[NewMessage] = []
    activity: float | None = None
    for m, item, mid in zip(batch, plan, ids):
        if isinstance(item, dict):
            written[m.uid] = lineage.message({"id": mid, **item})
            out.append(written[m.uid])
            if m.state == _ACTIVE:
                added.append(m)
                if lineage.is_activity(m.role, m.display_kind):
                    activity = item["timestamp"] if activity is None else max(activity, item["timestamp"])
        else:  # stored before, or earlier in this batch
            out.append(_same_or_conflict(m, item if isinstance(item, Message) else written[m.uid], session_id))
    if added:
        rows.update("sessions", {"id": session_id},
                    add={"message_count": len(added), "tool_call_count": sum(m.tool_call_total for m in added)},
                    greatest=None if activity is None else {"last_activity_at": activity})
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
    ids = iter(lineage.insert_messages(rows, new, skip_taken=skip_taken))
    return [next(ids) if isinstance(item, dict) else None for item in plan]


def _same_or_conflict(m: NewMessage, stored: Message, session_id: str) -> Message:
    if not m.same_payload(stored):
        raise MessageConflict(
            f"message uid {m.uid!r} is already stored in session {session_id} with different "
            "content; give the new message its own uid")
    return stored
