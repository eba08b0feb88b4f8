"""Whose WAL is this? Decided before SQLite opens a file, so a WAL is never read over a
main file it does not belong to (S-13, S-28).

SQLite replays whatever valid WAL lies beside a database: its header and frames carry
salts and checksums that tie the frames to one another, but nothing ties them to the main
file. When another store is copied over `state.db` under a live writer, that writer's WAL
stays beside the copy, and the next open would read the old history over the new file.

So every writer, when it opens a file in WAL mode, records in `<store>.wal-owner` (a small
JSON file, written atomically) the generation stamp of the main file it opened, with the
page and page size where the stamp lives. Before the next writer opens the file, a WAL
with content is checked against it: when the main file carries another generation stamp,
the WAL was written for the file that was replaced, and it is moved, with the `-shm`
beside it, into `retired-wal-<time>-<pid>/` with a manifest, never replayed. While another
process still holds it, nothing is moved and the open is refused (that process may still
read through it); the guidance says to quit it.

The main file is read with plain I/O only when this process has no descriptor on it; else
through the one SQLite holds (pread), so no lock of this process is ever dropped (S-12).
A WAL without an owner record (a store from an earlier release) is trusted, as before.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

from ....errors import Cause, StoreDamaged
from ....files import descriptors_of, private_file
from ....home import fsync_dir
from .holders import holders
from .ledger import save_json

OWNER_SUFFIX = ".wal-owner"
_STAMP = re.compile(rb"sessiondb-generation:[0-9a-f]{32}")
_CHUNK = 1 << 20


def owner_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + OWNER_SUFFIX)


def record(db_path: Path, generation: str, identity_page: int, page_size: int) -> None:
    """Say that the WAL beside `db_path` is written for the main file of `generation`."""
    current = _owner(db_path)
    if current == {"generation": generation, "identity_page": identity_page, "page_size": page_size}:
        return  # the common open: nothing changed, nothing written
    save_json(owner_path(db_path), {"generation": generation, "identity_page": identity_page, "page_size": page_size})


def set_aside_foreign_wal(db_path: Path) -> Path | None:
    """Before a writer opens `db_path`: move a WAL written for another main file aside.

    Returns the folder it was kept in (None when the WAL, if any, belongs). Raises
    StoreDamaged (cause replaced) when such a WAL is still held by another process.
    """
    foreign = foreign_wal(db_path)
    if foreign is None:
        return None
    others = holders(db_path)
    if others:
        raise StoreDamaged(
            f"the write-ahead log beside {db_path} was written for a file that was replaced, and "
            f"{', '.join(map(str, others))} still holds it; nothing was read from it. Quit those processes, "
            "then open the store again", Cause.REPLACED)
    return _keep(db_path, *foreign)


def foreign_wal(db_path: Path) -> tuple[str, str] | None:
    """(the WAL's generation, the main file's) when the WAL beside `db_path` has content
    and was written for another main file; None when it belongs or cannot be told."""
    try:
        if os.stat(f"{db_path}-wal").st_size == 0:
            return None
    except FileNotFoundError:
        return None
    owner = _owner(db_path)
    if owner is None:
        return None
    found = _main_generation(db_path, owner)
    if found is None or found == owner["generation"]:
        return None
    return owner["generation"], found


def _owner(db_path: Path) -> dict | None:
    try:
        data = json.loads(owner_path(db_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and isinstance(data.get("generation"), str)
            and isinstance(data.get("identity_page"), int) and isinstance(data.get("page_size"), int)):
        return None
    return {k: data[k] for k in ("generation", "identity_page", "page_size")}


def _main_generation(db_path: Path, owner: dict) -> str | None:
    """The generation stamp the main file carries: the owner's when it is anywhere in it,
    else another one found in it, else None (a file whose stamp was never checkpointed
    into it cannot be told apart, and its WAL is trusted)."""
    ours = owner["generation"].encode()
    held = descriptors_of(str(db_path))
    fd = held[0] if held else os.open(db_path, os.O_RDONLY)
    try:
        page = os.pread(fd, owner["page_size"], (owner["identity_page"] - 1) * owner["page_size"])
        if ours in page:
            return owner["generation"]
        other = _STAMP.search(page)
        if other is not None:
            return other.group().decode()
        # VACUUM renumbers pages: look through the whole file (only on this rare path).
        offset, tail, found = 0, b"", None
        while chunk := os.pread(fd, _CHUNK, offset):
            window = tail + chunk
            if ours in window:
                return owner["generation"]
            found = found or _STAMP.search(window)
            tail, offset = window[-len(ours):], offset + len(chunk)
        return found.group().decode() if found else None
    finally:
        if not held:
            os.close(fd)


def _keep(db_path: Path, wal_generation: str, db_generation: str) -> Path:
    """Move the stale WAL and its -shm into a retired-wal folder, with a manifest."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = db_path.parent / f"retired-wal-{stamp}-{os.getpid()}-replaced"
    n = 1
    while target.exists():
        n += 1
        target = db_path.parent / f"retired-wal-{stamp}-{os.getpid()}-replaced-{n}"
    target.mkdir(mode=0o700)
    wal = Path(f"{db_path}-wal")
    size = wal.stat().st_size
    os.replace(wal, target / wal.name)
    shm = Path(f"{db_path}-shm")
    if shm.exists():
        os.replace(shm, target / shm.name)
    manifest = {
        "database": str(db_path), "wal_copy": wal.name, "bytes": size, "pid": os.getpid(),
        "captured_at": time.time(), "cause": Cause.REPLACED.value,
        "wal_generation": wal_generation, "database_generation": db_generation,
        "note": "a WAL written for the file that was replaced; it was never replayed over the file that "
                "replaced it. Keep it until the store has been checked",
    }
    with private_file(target / "manifest.json", replace=False) as out:
        json.dump(manifest, out, indent=2)
    fsync_dir(db_path.parent)
    return target
