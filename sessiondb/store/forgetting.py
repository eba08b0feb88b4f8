"""Erasure (S-55): a person's conversations removed from every copy sessiondb made, and a
receipt that proves it by a scan of the raw files.

`forget(user_id=, session_id=, source=, before=)` on every backend, written once here:

1. **What goes.** The sessions every given selector matches, each with its whole
   conversation (the compression chain from its root down) and every branch taken from
   one of them, recursively: a branch starts from copies of its parent's messages, so
   erasing a conversation without its branches would leave its text behind. `before`
   takes a conversation only when every session of it was last active before then: one
   still going on is never half erased.
2. **Deleted a conversation per transaction**, so a conversation is never half gone and
   no transaction holds the store long; a session takes its messages (checkpoints and
   everything an adapter stores are messages), usage, usage calls, turn records (their
   edit receipts) and lease with it, and the gateway's routes to it go. Before a
   conversation is deleted, the first bytes of its texts are kept, in memory only, as
   the fragments the scan looks for.
3. **Beside the store**: batches refused for those sessions are removed from the spool, and
   the turns' checkpoints of their agents' working trees (sessiondb.snapshots), with every
   file content no other session's checkpoint holds.
4. **The engine's own copies**: the freed pages are handed back (`Backend.release_space`:
   SQLite's incremental vacuum, PostgreSQL's VACUUM), then `Backend.scrub`: SQLite (whose
   writer overwrites what it deletes) merges and rewrites its words and vectors index and
   resets both write-ahead logs; PostgreSQL says what its server's WAL and backups keep.
5. **The scan.** Every file the backend owns, the spool, and the copies it made and does
   not rewrite (backups, retired-WAL captures) are read raw for the fragments; a capture
   already brought back into the store that holds one is removed. A fragment
   found where a kept message starts with the same text is that message's, not a copy.
   What still holds a fragment is named in the receipt with what to do about it.
"""

from __future__ import annotations

import mmap
import os
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Iterable, Iterator

from ..model import BRANCH, COMPRESSION, ForgetReceipt
from . import commands as cmd
from . import retention, spool
from .backend import Backend, Traces
from .lineage import ancestors
from .rows import Rows, active_at, one_of, starting

#: The bytes of each text's head kept as a fragment to look for: long enough that another
#: conversation's text rarely starts the same way, short enough to sit in one page.
FRAGMENT_BYTES = 48
#: A text shorter than this (in bytes) gives no fragment: "ok" is in every store.
MIN_FRAGMENT_BYTES = 16
#: How many fragments the scan looks for at most, spread over every erased text: each is
#: one pass over every file (a 100 MB store and 64 fragments read in a few seconds).
MAX_FRAGMENTS = 64
#: Sessions read per page while choosing what `before` takes.
PAGE = 1000
_FAMILY = (COMPRESSION, BRANCH)  # the relations whose child holds copies of its parent's text


@dataclass
class _Erased:
    """What one conversation's transaction deleted (returned by the unit of work, which a
    backend may run again from the start: nothing outside it is touched)."""

    sessions: list[str] = field(default_factory=list)
    messages: int = 0
    usage_rows: int = 0
    turns: int = 0
    fragments: list[str] = field(default_factory=list)


def forget(backend: Backend, command: cmd.Forget) -> ForgetReceipt:
    """Run the erasure `command` describes (see the module docstring) and return its receipt."""
    conversations = backend.read(partial(_conversations, command=command))
    if conversations:
        backend.read(partial(retention.refuse_held, session_ids=set().union(*conversations)))
    receipt = ForgetReceipt(asked=command.asked(), dry_run=command.dry_run)
    if command.dry_run:
        receipt.sessions = sorted(sid for family in conversations for sid in family)
        receipt.messages, receipt.usage_rows, receipt.turns = backend.read(partial(_counts, ids=receipt.sessions))
        return receipt
    texts: list[str] = []
    for family in conversations:
        erased = backend.write(partial(_erase, ids=sorted(family)))
        receipt.sessions += erased.sessions
        receipt.messages += erased.messages
        receipt.usage_rows += erased.usage_rows
        receipt.turns += erased.turns
        texts += erased.fragments
    receipt.sessions.sort()
    receipt.spooled_batches = _unspool(backend.spool_anchor, set(receipt.sessions))
    from ..snapshots import forget_sessions  # hashlib, loaded only when a forget runs
    receipt.checkpoint_files = forget_sessions(backend.location, set(receipt.sessions))
    if not receipt.sessions:
        return receipt
    receipt.bytes_released = backend.release_space()
    traces = backend.scrub()
    receipt.notes += traces.notes
    _scan(backend, traces, _spread(texts), receipt)
    return receipt


# --- what goes ---------------------------------------------------------------------------


def _conversations(rows: Rows, command: cmd.Forget) -> list[set[str]]:
    """The families the command takes: each a conversation with its branches, no two sharing a session."""
    where: dict[str, object] = {}
    if command.user_id is not None:
        where["user_id"] = command.user_id
    if command.source is not None:
        where["source"] = command.source
    if command.session_id is not None:
        where["id"] = command.session_id
    families: list[set[str]] = []
    taken: set[str] = set()
    for sid in _matching(rows, where, command.before):
        if sid in taken:
            continue
        family = _family(rows, sid)
        if command.before is not None and not _all_before(rows, family, command.before):
            continue
        family -= taken  # a branch matched on its own before the conversation it was taken from
        taken |= family
        families.append(family)
    return families


def _matching(rows: Rows, where: dict[str, object], before: float | None) -> Iterator[str]:
    if before is None:
        yield from (row["id"] for row in rows.select("sessions", where, columns=("id",), order=("id",)))
        return
    after = None
    while True:
        page = rows.recent(where, until=before, after=after, limit=PAGE)
        yield from (row["id"] for row in page)
        if len(page) < PAGE:
            return
        after = (active_at(page[-1]), page[-1]["id"])


def _family(rows: Rows, session_id: str) -> set[str]:
    """The session's conversation from its root down, and every branch taken from any of it."""
    chain = ancestors(rows, session_id)
    family = {chain[-1] if chain else session_id}
    level = set(family)
    while level:
        children = rows.select("sessions", {"parent_session_id": one_of(sorted(level)),
                                            "parent_relation": one_of(_FAMILY)}, columns=("id",))
        level = {row["id"] for row in children} - family
        family |= level
    return family


def _all_before(rows: Rows, family: set[str], before: float) -> bool:
    found = rows.select("sessions", {"id": one_of(sorted(family))}, columns=("last_activity_at", "started_at"))
    return all(active_at(row) < before for row in found)


def _counts(rows: Rows, ids: list[str]) -> tuple[int, int, int]:
    """The messages, usage rows and turn records of these sessions."""
    if not ids:
        return 0, 0, 0
    this = {"session_id": one_of(ids)}
    messages, usage, turns = (rows.count(table, this)[None]["count"] for table in ("messages", "usage", "turns"))
    return messages, usage, turns


def _erase(rows: Rows, ids: list[str]) -> _Erased:
    """Delete one family in this transaction, keeping the heads of its texts for the scan."""
    this = {"session_id": one_of(ids)}
    found = rows.select("sessions", {"id": one_of(ids)}, columns=("id", "title"))
    erased = _Erased(sessions=[row["id"] for row in found])
    if not found:
        return erased  # gone since it was chosen (another process's forget, say)
    heads = _heads(row["title"] for row in found)
    for row in rows.select("messages", this, columns=("content", "reasoning")):
        heads += _heads((row["content"], row["reasoning"]))
    erased.fragments = _spread(heads)  # a forget of many conversations holds MAX_FRAGMENTS of each
    erased.messages, erased.usage_rows, erased.turns = _counts(rows, ids)
    retention.remove_sessions(rows, ids)
    return erased


def _heads(texts: Iterable[str | None]) -> list[str]:
    """Each text's first FRAGMENT_BYTES bytes (whole characters), where it has enough."""
    heads = []
    for text in texts:
        if not isinstance(text, str):
            continue
        head = text[:FRAGMENT_BYTES].encode("utf-8", "surrogatepass")[:FRAGMENT_BYTES].decode("utf-8", "ignore")
        if len(head.encode("utf-8", "surrogatepass")) >= MIN_FRAGMENT_BYTES:
            heads.append(head)
    return heads


def _spread(texts: list[str]) -> list[str]:
    """At most MAX_FRAGMENTS distinct fragments, taken evenly over every erased text."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) <= MAX_FRAGMENTS:
        return distinct
    step = len(distinct) / MAX_FRAGMENTS
    return [distinct[int(i * step)] for i in range(MAX_FRAGMENTS)]


def _unspool(anchor: Path, sessions: set[str]) -> int:
    """Remove the spooled batches of the erased sessions; how many went."""
    removed = 0
    for path in spool.pending(anchor):
        try:
            if spool.read(path).get("session_id") in sessions:
                path.unlink()
                removed += 1
        except (OSError, ValueError):
            continue  # unreadable or gone: the scan below still reads its bytes
    return removed


# --- the scan ----------------------------------------------------------------------------


def _scan(backend: Backend, traces: Traces, fragments: list[str], receipt: ForgetReceipt) -> None:
    receipt.fragments = len(fragments)
    needles = {text: text.encode("utf-8", "surrogatepass") for text in fragments}
    kept_by_others: dict[str, bool] = {}

    def kept(text: str) -> bool:  # a kept message (or title) starting with the same text: its own, not a copy
        if text not in kept_by_others:
            kept_by_others[text] = backend.read(partial(_held_by_kept, text=text))
        return kept_by_others[text]

    spooled = spool.pending(backend.spool_anchor)
    for path, remedy in [*traces.owned, *((p, "remove it: its session was erased") for p in spooled)]:
        found = [text for text in sorted(_found_in(path, needles, receipt)) if not kept(text)]
        if found:
            receipt.remaining.append(f"{path} still holds {len(found)} of the erased texts' fragments; {remedy}")
    for path, remedy in traces.copies:
        if _found_in(path, needles, receipt):
            receipt.copies.append((str(path), remedy))
    for path in traces.disposable:
        if _found_in(path, needles, receipt):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            receipt.copies_removed.append(str(path))


def _held_by_kept(rows: Rows, text: str) -> bool:
    return any(rows.select("messages", {column: starting(text)}, columns=("id",), limit=1)
               for column in ("content", "reasoning")) or bool(
        rows.select("sessions", {"title": starting(text)}, columns=("id",), limit=1))


def _found_in(path: Path, needles: dict[str, bytes], receipt: ForgetReceipt) -> set[str]:
    """The fragments whose bytes occur in the file at `path` (in any file below it, for a
    folder); each file read is added to the receipt's scanned files."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    found: set[str] = set()
    for file in files:
        try:
            with open(file, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                receipt.scanned.append(str(file))
                receipt.scanned_bytes += size
                if not size:
                    continue
                with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    found.update(text for text, needle in needles.items() if data.find(needle) != -1)
        except FileNotFoundError:
            continue
    return found
