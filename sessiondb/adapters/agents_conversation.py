"""One Agents SDK conversation in a sessiondb store: the blocking work behind SessiondbSession.

Every method is one short sequence of Store calls, run by SessiondbSession on a worker
thread. The conversation is the sessiondb session named by the SDK's id and the
sessions a compaction rotated it into: reads follow `tip()`, writes land at the tip.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

from ..errors import InvalidInput, NotFound, SessionExists
from ..model import Message, Role, SearchHit, Session, dump_json
from ..store.alignment import align
from ..store.contract import Store
from .agents_items import from_message, item_uid, normalise, to_message

SOURCE = "openai-agents"
#: Session metadata: the SDK's own id (when it was mapped) and the undo epoch.
ORIGINAL_ID = "openai_agents_session_id"
EPOCH = "openai_agents_epoch"


class StoredConversation:
    """The conversation `session_id` (sessiondb's id; `original` the SDK's) in `store`."""

    def __init__(self, store: Store, session_id: str, original: str) -> None:
        self.store, self.session_id, self.original = store, session_id, original

    def root(self, create: bool) -> Session | None:
        """The session the SDK's id names, created on first write (source openai-agents)."""
        try:
            return self.store.get_session(self.session_id)
        except NotFound:
            if not create:
                return None
        metadata = {} if self.session_id == self.original else {ORIGINAL_ID: self.original}
        try:
            return self.store.create_session(SOURCE, session_id=self.session_id, metadata=metadata)
        except SessionExists:  # another writer created it first
            return self.store.get_session(self.session_id)

    def epoch(self, root: Session | None = None) -> int:
        """How many undos the conversation has seen: part of every uid minted after them."""
        root = root or self.root(create=False)
        return int(root.metadata.get(EPOCH, 0)) if root else 0

    def live(self, limit: int | None) -> tuple[Session | None, list[Message]]:
        """The tip and its newest `limit` live messages, read again if a rotation moved them."""
        while True:
            try:
                tip = self.store.tip(self.session_id)
            except NotFound:
                return None, []
            rows = (self.store.transcript(tip.id) if limit is None
                    else self.store.transcript(tip.id, limit=limit, order="desc")[::-1])
            if self.store.tip(self.session_id).id == tip.id:
                return tip, rows

    def add(self, batch: list[tuple[dict[str, Any], str]]) -> None:
        """Append the (item, JSON text) pairs not yet stored, in one atomic batch: one store
        call, which creates the session on first write and reads the conversation's end."""
        metadata = {} if self.session_id == self.original else {ORIGINAL_ID: self.original}
        self.store.extend(self.session_id, partial(self._unstored, batch), newest=len(batch),
                          create={"source": SOURCE, "metadata": metadata})

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

    def messages(self, batch: Sequence[Any], follows: str, epoch: int) -> list[dict[str, Any]]:
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
        tip, tail = self.live(2)
        if not tail:
            return None
        self._next_epoch()
        self.store.rewind(tip.id, tail[-2].id if len(tail) > 1 else 0)
        return from_message(tail[-1])

    def clear(self) -> None:
        """Rewind every live message."""
        tip, tail = self.live(1)
        if tail:
            self._next_epoch()
            self.store.rewind(tip.id, 0)

    def _next_epoch(self) -> None:
        # Before the rewind: an item undone now and added again must not meet its undone row.
        root = self.root(create=False)
        if root is not None:
            self.store.update_metadata(root.id, {EPOCH: self.epoch(root) + 1})

    def search(self, query: str, limit: int, include_tools: bool) -> list[SearchHit]:
        """Matches in every session of the conversation's lineage, best first."""
        try:
            lineage = self.store.lineage(self.session_id)
        except NotFound:
            return []
        hits = [hit for s in lineage
                for hit in self.store.search(query, session_id=s.id, limit=limit, include_tools=include_tools)]
        return sorted(hits, key=lambda hit: -hit.score)[:limit]

    def record_usage(self, usages: list[Any], model: str, provider: str) -> None:
        """Record each of the SDK's Usage values as one model call."""
        root = self.root(create=True)
        for u in usages:
            self.store.record_usage(
                root.id, model=model, provider=provider, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                cache_read_tokens=u.input_tokens_details.cached_tokens or 0,
                reasoning_tokens=u.output_tokens_details.reasoning_tokens or 0)

    def branch(self, turn_number: int, title: str | None) -> Session:
        """A new session copying the live conversation before its `turn_number`-th user message."""
        tip, rows = self.live(None)
        users = [i for i, m in enumerate(rows) if m.role == Role.USER.value]
        if isinstance(turn_number, bool) or not isinstance(turn_number, int) or not 1 <= turn_number <= len(users):
            raise InvalidInput(f"turn_number must be between 1 and {len(users)} (the conversation's user turns)")
        at = users[turn_number - 1]
        return self.store.branch(tip.id, rows[at - 1].id if at else 0, title=title)
