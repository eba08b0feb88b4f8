"""The repair ledger (S-20): a damaged file is not re-repaired forever.

`state.db.repair-attempts.json`, beside the database, counts the failed repair passes of
each damaged file; after 3 a fourth is refused and the recover steps are printed instead.

A file is known by its *shape*: its size plus a SHA-256 of its first and last 64 KiB, with
the header's volatile bytes (24-27, the change counter, and 92-95, version-valid-for)
masked. An ordinary commit only bumps those counters in page 1 (the rest of the
header and the sampled pages rarely change without a real rewrite), so it does not reset
the budget; a repair that rewrites pages or a restore from a backup changes the shape
and starts afresh. A failed pass records its count under the shape before and after,
so a pass that changes a few bytes without healing the file keeps its tally. A sample
can miss where two files differ (damage in the middle of a large file), so a pass that
finds the file healthy also clears its shape: a store restored from a good copy and
examined once never inherits the budget of the damaged file it replaced.

The sample is read with plain file I/O only while this process has no descriptor open on
the database; otherwise it is read with pread through a descriptor SQLite already holds,
which is never closed here (closing any descriptor on the file would drop every POSIX lock
the process holds on it, S-12). Both paths read the same bytes, so the key has one shape
whether or not a live connection exists.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ....files import descriptors_of, private_file

MAX_FAILED = 3
SAMPLE = 64 * 1024
VOLATILE = ((24, 28), (92, 96))  # header byte ranges that every commit may change
SUFFIX = ".repair-attempts.json"


def ledger_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + SUFFIX)


def read_span(path: Path, offset: int, length: int) -> bytes:
    """`length` bytes at `offset` of `path`, without ever closing a descriptor SQLite holds."""
    held = descriptors_of(os.path.realpath(path))
    if held:
        return os.pread(held[0], length, offset)
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, length, offset)
    finally:
        os.close(fd)


def file_key(db_path: Path) -> str:
    """The shape of the file: size + masked head/tail sample, as a hex digest."""
    size = os.stat(db_path).st_size
    head = bytearray(read_span(db_path, 0, min(SAMPLE, size)))
    for start, end in VOLATILE:
        head[start:min(end, len(head))] = b"\x00" * max(0, min(end, len(head)) - start)
    tail_start = max(SAMPLE, size - SAMPLE)
    tail = read_span(db_path, tail_start, size - tail_start) if size > tail_start else b""
    import hashlib  # OpenSSL's 3.5 MB resident, only for a repair: not in every store's process

    digest = hashlib.sha256()
    digest.update(str(size).encode() + b"\n")
    digest.update(bytes(head))
    digest.update(tail)
    return f"{size}:{digest.hexdigest()}"


def _load(db_path: Path) -> dict:
    try:
        data = json.loads(ledger_path(db_path).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return {"version": 1, "files": {}}
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        return {"version": 1, "files": {}}
    return data


def _save(db_path: Path, data: dict) -> None:
    save_json(ledger_path(db_path), data)


def save_json(path: Path, data: object) -> None:
    """Write `data` as JSON into `path`: private, whole, atomic (files.private_file)."""
    with private_file(path) as out:
        json.dump(data, out, indent=2)


def failures(db_path: Path, key: str) -> int:
    entry = _load(db_path)["files"].get(key)
    return int(entry.get("failures", 0)) if isinstance(entry, dict) else 0


def exhausted(db_path: Path, key: str) -> bool:
    return failures(db_path, key) >= MAX_FAILED


def record_failure(db_path: Path, before: str, after: str | None, detail: str) -> int:
    """Count one failed pass of the file known as `before` (now `after`); returns the tally."""
    data = _load(db_path)
    count = failures(db_path, before) + 1
    entry = {"failures": count, "last_attempt": time.time(), "detail": detail}
    data["files"][before] = entry
    if after and after != before:
        data["files"][after] = dict(entry)
    _save(db_path, data)
    return count


def record_success(db_path: Path, before: str) -> None:
    """A pass healed the file: its old shape no longer needs a budget."""
    data = _load(db_path)
    if data["files"].pop(before, None) is not None:
        _save(db_path, data)
