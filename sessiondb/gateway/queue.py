"""The retry queue that never drops (S-35): per-key batches waiting for their store.

While a key's store is unavailable its batches wait here in memory, in arrival order.
When a key holds more than `cap` waiting messages, its whole in-memory queue is written
to one spool file under the gateway's home (`<home>/gateway/spool/`, atomic JSON, 0600,
directory fsynced; the file format and writer are sessiondb.store.spool's, with the
record's `session_id` field carrying the session key). So everything on disk for a key is
older than everything in memory, and a flush sends the key's spool files first, oldest
first, then its memory queue. A file is deleted only once its batch committed; a flush
stops at a key's first failure, so a later batch never overtakes an earlier one. The
spool is read back at start, so messages spilled before a crash or a shutdown are
replayed by the next process.

Messages carry their uid and arrival time before they are queued, so a replay that is
interrupted and repeated stores nothing twice. Keys are typed (`SessionKey`): parsed once
by the gateway, or once when a spool file is indexed; a file whose key does not parse is
left in place for a person to look at.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..home import fsync_dir
from ..keys import SessionKey, parse
from ..inputs import prepare_messages
from ..store import spool

#: Where the gateway's spool lives under its home; spool.write puts files in `<anchor's dir>/spool`.
SPOOL_ANCHOR = Path("gateway") / "queue"
log = logging.getLogger("sessiondb.gateway")
Batch = list[dict[str, Any]]


@dataclass
class KeyQueue:
    batches: deque = field(default_factory=deque)  # in-memory batches, oldest first
    files: list[Path] = field(default_factory=list)  # spool files, oldest first
    failures: int = 0  # consecutive failed flushes
    next_attempt: float = 0.0  # monotonic time before which a retry is not due

    @property
    def queued(self) -> int:
        return sum(len(b) for b in self.batches)

    def empty(self) -> bool:
        return not self.batches and not self.files


class Backlog:
    """Every key's waiting batches, in memory and on disk."""

    def __init__(self, home: Path, cap: int) -> None:
        if not isinstance(cap, int) or isinstance(cap, bool) or cap < 1:
            raise ValueError("queue_cap must be a positive integer")
        self.cap = cap
        self.anchor = home / SPOOL_ANCHOR
        self.lock = threading.RLock()
        self.keys: dict[SessionKey, KeyQueue] = {}

    @property
    def directory(self) -> Path:
        return spool.spool_dir(self.anchor)

    def load(self) -> int:
        """Index the spool files left by earlier processes; returns how many spool files wait in all."""
        with self.lock:
            known = {p for q in self.keys.values() for p in q.files}
            for path in spool.pending(self.anchor):
                if path in known:
                    continue
                try:
                    key = parse(spool.read(path)["session_id"])
                except (OSError, ValueError, KeyError):
                    continue  # not ours to replay; left in place for a person to look at
                self.queue(key).files.append(path)
            for q in self.keys.values():
                q.files.sort(key=lambda p: p.name)
            return sum(len(q.files) for q in self.keys.values())

    def queue(self, key: SessionKey) -> KeyQueue:
        with self.lock:
            q = self.keys.get(key)
            if q is None:
                q = self.keys[key] = KeyQueue()
            return q

    def waiting(self, key: SessionKey) -> KeyQueue | None:
        """The key's queue if anything of it waits (in memory or on disk), else None."""
        with self.lock:
            q = self.keys.get(key)
            return None if q is None or q.empty() else q

    def waiting_keys(self, *, due_by: float | None = None) -> list[SessionKey]:
        """Keys with messages waiting; with `due_by` (monotonic), only those whose retry is due by then."""
        with self.lock:
            return [k for k, q in self.keys.items()
                    if not q.empty() and (due_by is None or q.next_attempt <= due_by)]

    def settle(self, key: SessionKey) -> None:
        """Forget the key's queue once everything of it was stored."""
        with self.lock:
            q = self.keys.get(key)
            if q is not None and q.empty():
                del self.keys[key]

    def add(self, key: SessionKey, batch: Batch, cause: str) -> Path | None:
        """Queue a batch at the end of the key's queue; spills the queue past the cap."""
        with self.lock:
            q = self.queue(key)
            q.batches.append(batch)
            if q.queued > self.cap:
                try:
                    return self.spill(key, cause)
                except OSError as exc:  # the spool is unwritable too: keep waiting in memory
                    log.error("%s: could not spool %d waiting message(s) (%s); they stay in memory",
                              key, q.queued, exc)
        return None

    def spill(self, key: SessionKey, cause: str) -> Path | None:
        """Write the key's whole in-memory queue to one spool file (at the cap, and at close)."""
        with self.lock:
            q = self.queue(key)
            if not q.batches:
                return None
            messages = [m for b in q.batches for m in b]
            path = spool.write(self.anchor, key.text, prepare_messages(messages), cause)
            q.files.append(path)
            q.batches.clear()
            return path

    def read_file(self, path: Path) -> Batch:
        return spool.read(path)["messages"]

    def drop_file(self, key: SessionKey, path: Path) -> None:
        """Forget a spool file whose batch committed."""
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
        with self.lock:
            q = self.queue(key)
            if path in q.files:
                q.files.remove(path)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per profile: keys waiting, messages queued in memory, spool files and their messages."""
        out: dict[str, dict[str, int]] = {}
        with self.lock:
            items = [(k, q.queued, list(q.files)) for k, q in self.keys.items() if not q.empty()]
        for key, queued, files in items:
            row = out.setdefault(key.profile, {"keys": 0, "queued": 0, "spool_files": 0, "spooled": 0})
            row["keys"] += 1
            row["queued"] += queued
            row["spool_files"] += len(files)
            for path in files:
                try:
                    row["spooled"] += len(self.read_file(path))
                except (OSError, ValueError):
                    pass
        return out
