"""Identity on every read path: what a read returns can be written back without doubling.

A message's identity is its uid. `transcript` and `export` return it as a field; `resume`
returns model-ready dicts (`ModelMessage`) that carry it as an attribute a provider never
sees; `append` reads it back from all of them (S-01, S-44). `flush` is the write an agent
makes with its whole conversation: what carries an identity is stored once by uid, and
what lost it on the way (a JSON round trip, a copy into a plain dict) is matched by what
it says and its position against the whole lineage's stored history (store/alignment.py:
archived messages and summaries included, across every compaction and rotation), so only
the new is stored (S-47).
"""

from __future__ import annotations

from functools import partial
from typing import Callable, Hashable, Iterable, Mapping

from ..errors import SessionTooLarge
from ..model import Message, MessageLimits, ModelMessage
from ..inputs import NewMessage, check_nonnegative, check_session_ref, identity_of, prepare_messages
from . import lineage
from .alignment import align
from .backend import Backend
from .contract import MessageInput


RESUME_LIMIT = 20_000  # active messages resume() hands over at most (S-42); 0 disables


class Identity:
    """The resume and flush methods of CheckedStore."""

    _open: Callable[[], Backend]  # CheckedStore's: the backend, or StoreClosed
    _limits: MessageLimits
    _append_batch: Callable[[str, tuple[NewMessage, ...]], list[Message]]
    _stream_instead: Callable[[SessionTooLarge, str, str], SessionTooLarge]  # Transfer's

    def resume(self, session_id: str, *, max_messages: int = RESUME_LIMIT) -> list[ModelMessage]:
        sid, limit = check_session_ref(session_id), check_nonnegative(max_messages, "max_messages")
        try:
            return self._open().read(partial(lineage.live_model_messages, session_id=sid, max_messages=limit))
        except SessionTooLarge as exc:
            raise self._stream_instead(exc, "resume", sid) from None

    def flush(self, session_id: str, conversation: MessageInput | Iterable[MessageInput]) -> list[Message]:
        sid = check_session_ref(session_id)
        items = [conversation] if isinstance(conversation, (Message, Mapping)) else conversation
        if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
            prepare_messages(items)  # raises the same InvalidInput as append
        items = list(items)
        batch = prepare_messages(items, self._limits)  # the whole conversation is checked before anything is read
        given = [identity_of(raw) is not None for raw in items]
        known: dict[int, Message] = {}
        if not all(given):  # what carries its uid is stored once by uid: no history to read
            claimed = {m.uid for m, has in zip(batch, given) if has}

            def same(i: int, row: Message) -> bool:
                # A message without identity is a stored row if it says the same and no
                # message of the conversation claims that row by uid.
                return row.uid == batch[i].uid if given[i] else row.uid not in claimed and batch[i].says(row)

            def key(i: int) -> Hashable:
                return batch[i].uid if given[i] else _says(batch[i].content, batch[i].tool_call_id)

            _tip, live = self._open().read(partial(lineage.live_messages, session_id=sid))
            if len(live) <= len(batch) and all(same(i, row) for i, row in enumerate(live)):
                matched = dict(enumerate(live))  # the live conversation and what follows it: the common case
            else:  # a list kept from before a compaction, or from a summary since compacted (S-47)
                _tip, history = self._open().read(partial(lineage.lineage_messages, session_id=sid))
                matched = align(history, len(batch), same, key,
                                lambda row: (row.uid, _says(row.text, row.tool_call_id))).rows
            known = {i: row for i, row in matched.items() if not given[i]}
        fresh = tuple(m for i, m in enumerate(batch) if i not in known)
        written = iter(self._append_batch(sid, fresh) if fresh else ())
        return [known[i] if i in known else next(written) for i in range(len(batch))]


def _says(text: str | None, tool_call_id: str | None) -> tuple[str, str | None]:
    """A hashable key of what a message says, equal whenever NewMessage.says matches."""
    return text or "", tool_call_id
