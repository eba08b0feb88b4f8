"""The spool: messages a store refused to write, kept on disk until they can be.

One file per refused batch in `<store dir>/spool/`, named so that sorting the names gives
the order they were refused in. Each is written atomically through sessiondb.files (0600,
synced, renamed into place, never through a planted link), so a crash never leaves half a batch.
Replay appends each batch in order and deletes its file only after the append committed;
appends are idempotent by uid, so a replay interrupted between the two repeats nothing.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

from ..files import private_file
from ..home import ensure_private_dir, fsync_dir
from ..inputs import NewMessage
from ..model import json_text

SPOOL_DIR = "spool"
FORMAT = "sessiondb-spool"
VERSION = 1


def spool_dir(db_path: Path) -> Path:
    return db_path.parent / SPOOL_DIR


class WaitsForGeneration(Exception):
    """A batch refused by another generation of the store (a file since replaced): it is
    kept until that generation is back, never replayed into another file."""


def write(db_path: Path, session_id: str, batch: list[NewMessage], cause: str,
          generation: str | None = None) -> Path:
    """Keep a refused batch on disk; returns the file it is in. `generation` names the
    store file that refused it, when the backend can tell (it is replayed only there)."""
    directory = spool_dir(db_path)
    ensure_private_dir(directory)
    now = time.time()
    record = {
        "format": FORMAT,
        "version": VERSION,
        "store": str(db_path),
        "session_id": session_id,
        "cause": cause,
        "generation": generation,
        "spooled_at": now,
        # Unstamped messages get the refusal time, so a later replay keeps when they happened.
        "messages": [_message_dict(m, now) for m in batch],
    }
    name = f"{_stamp():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    final = directory / name
    with private_file(final, replace=False) as out:
        out.write(json_text(record))  # half a character kept, as JSON's escape
    return final


_stamps = threading.Lock()
_last_stamp = 0


def _stamp() -> int:
    """Nanoseconds since the epoch, strictly increasing within this process: the names of
    the batches one process spools sort in the order they were written, even when two fall
    in the same tick or the wall clock steps back."""
    global _last_stamp
    with _stamps:
        _last_stamp = max(time.time_ns(), _last_stamp + 1)
        return _last_stamp


def pending(db_path: Path) -> list[Path]:
    """Spooled batches, oldest first."""
    directory = spool_dir(db_path)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.suffix == ".json" and not p.name.startswith("."))


def read(path: Path) -> dict[str, Any]:
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("format") != FORMAT or record.get("version") != VERSION:
        raise ValueError(f"{path} is not a sessiondb spool file of version {VERSION}")
    return record


def replay(db_path: Path, append: Callable[[str, list[dict[str, Any]]], object],
           generation: str | None = None) -> Iterator[tuple[Path, BaseException | None]]:
    """Append each spooled batch in order, deleting its file once committed.

    Yields each file with the error that kept it (None when it was replayed). A batch
    that fails stays on disk for the next replay; later batches still get their turn. A
    batch refused by another `generation` of the store waits (WaitsForGeneration).
    """
    for path in pending(db_path):
        try:
            record = read(path)
            refused_by = record.get("generation")
            if refused_by and generation and refused_by != generation:
                raise WaitsForGeneration(f"refused by another generation of this store ({refused_by}, a file since "
                                         f"replaced by {generation}); it waits until that file is back")
            append(record["session_id"], record["messages"])
        except Exception as exc:  # noqa: BLE001 - reported to the caller, the file is kept
            yield path, exc
            continue
        path.unlink()
        fsync_dir(path.parent)
        yield path, None


def _message_dict(m: NewMessage, now: float) -> dict[str, Any]:
    data = m._asdict()
    parts = data.pop("parts")
    data.pop("tool_call_total")
    data["content"] = json.loads(parts) if parts is not None else data["content"]
    if data["tool_calls"] is not None:
        data["tool_calls"] = json.loads(data["tool_calls"])
    if data["timestamp"] is None:
        data["timestamp"] = now
    return data
