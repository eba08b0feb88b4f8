"""The retry queue that never drops (S-35, S-39): per-key batches waiting for their store, on disk.

A batch the gateway accepts and cannot store now is written to its own spool file under
the gateway's home (`<home>/gateway/spool/`, atomic JSON, 0600, directory fsynced; the
file format and writer are sessiondb.store.spool's, with the record's `session_id` field
carrying the session key) before the append returns, so what the chat platform was told
is accepted survives a SIGKILL. Memory holds only the index: each key's spool files, in
arrival order. A key with files waiting queues every new batch behind them, and a flush
sends them oldest first and stops at the key's first failure, so a later batch never
overtakes an earlier one. A file is deleted only once its batch committed. The spool is
indexed at start, so the batches of a process that died are replayed by the next one.

Messages carry their uid and arrival time before they are spooled, so a replay that is
interrupted and repeated stores nothing twice. Keys are typed (`SessionKey`): parsed once
by the gateway, or once when a spool file is indexed; a file whose key does not parse is
left in place for a person to look at.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..home import fsync_dir
from ..keys import SessionKey, parse
from ..inputs import prepare_messages
from ..store import spool

#: Where the gateway's spool lives under its home; spool.write puts files in `<anchor's dir>/spool`.
SPOOL_ANCHOR = Path("gateway") / "queue"
Batch = list[dict[str, Any]]


@dataclass
class KeyQueue:
    files: list[Path] = field(default_factory=list)  # spool files, oldest first
    failures: int = 0  # consecutive failed flushes
    next_attempt: float = 0.0  # monotonic time before which a retry is not due

    def empty(self) -> bool:
        return not self.files


class Backlog:
    """Every key's waiting batches: files on disk, indexed in memory."""

    def __init__(self, home: Path) -> None:
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
        """The key's queue if anything of it waits, else None."""
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

    def add(self, key: SessionKey, batch: Batch, cause: str) -> Path:
        """Write a batch to its own spool file at the end of the key's queue; OSError when the
        spool cannot keep it (then nothing of it is queued). The caller holds the key's lock,
        so one key's files are written, and named, in arrival order."""
        path = spool.write(self.anchor, key.text, prepare_messages(batch), cause)
        with self.lock:
            self.queue(key).files.append(path)
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
        """Per profile: keys waiting, their spool files and the messages in them."""
        out: dict[str, dict[str, int]] = {}
        with self.lock:
            items = [(k, list(q.files)) for k, q in self.keys.items() if not q.empty()]
        for key, files in items:
            row = out.setdefault(key.profile, {"keys": 0, "spool_files": 0, "spooled": 0})
            row["keys"] += 1
            row["spool_files"] += len(files)
            for path in files:
                try:
                    row["spooled"] += len(self.read_file(path))
                except (OSError, ValueError):
                    pass
        return out
