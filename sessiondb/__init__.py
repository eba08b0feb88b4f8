"""sessiondb: the durable memory of AI agents.

    import sessiondb
    with sessiondb.open_store() as store:
        s = store.create_session("cli", title="Fix the flaky test")
        store.append(s.id, [{"role": "user", "content": "why does it fail?"}])
        print(store.transcript(s.id))
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .errors import (
    Cause, Conflict, InvalidInput, MessageConflict, NotASessionStore, NotFound, SessionDBError,
    StorageError, StoreBusy, StoreClosed, TitleConflict, UnsupportedSQLite,
)
from .errors import CompactionBusy, CompressionClosed, LeaseLost, SessionTooLarge
from .model import Message, MessageLimits, MessageState, Page, Role, Session, Turn, Usage
from .model import Lease
from .store.aio import AsyncStore
from .store import locations
from .store.locations import register_backend
from .store.captured import RestoreReport, restore_captured
from .store.contract import Store
from .store.optional import Doctor, Maintainable, Salvageable

__all__ = [
    "open_store", "open_async_store", "register_backend", "open_doctor", "restore_captured", "RestoreReport",
    "Store", "Maintainable", "Doctor", "Salvageable", "AsyncStore", "Session", "Message", "Role",
    "MessageState", "Page", "Usage", "SessionDBError", "InvalidInput", "NotFound", "Conflict",
    "MessageConflict", "TitleConflict", "StoreBusy", "StoreClosed", "StorageError",
    "UnsupportedSQLite", "NotASessionStore", "Cause",
    "Lease", "MessageLimits", "CompactionBusy", "LeaseLost", "CompressionClosed", "SessionTooLarge", "Turn",
]


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    durability: str = "full",
    patience: float = 30.0,
    vfs: str | None = None,
    clock: Callable[[], float] | None = None,
    limits: MessageLimits = MessageLimits(),
    **options: Any,
) -> Store:
    """Open a profile's store, or the store at `location` (a file path or a URL).

    A path (or a `sqlite:` URL) is an embedded SQLite store. With no location, `home`
    defaults to $SESSIONDB_HOME or ~/.sessiondb; the default profile's store is
    `<home>/state.db`, profile NAME's is `<home>/profiles/NAME/state.db`. durability
    "full" (the default) makes every acknowledged write survive power loss; "normal"
    survives the process dying only. `patience` is how long a write waits for another
    process's lock before StoreBusy. `limits` bounds every field of one message and a
    session's metadata, for append, import and the session calls alike (MessageLimits:
    16 MiB of content, 4 MiB of reasoning, 1,000 tool calls, 256 KiB of metadata... by default).

    A `postgresql://` (or `postgres://`) URL is a store on a PostgreSQL server (the
    `sessiondb[postgres]` extra): each profile is a schema of that database (`sessiondb`
    for the default, `sessiondb_NAME` for profile NAME, or `schema=` to name one), created
    and migrated on first open. There `patience` is how long a call keeps retrying while
    the server is unreachable or restarting, `pool_size` (default 10) bounds this handle's
    connections, durability "normal" turns off the server's synchronous commit, and
    `replicas` (a list of URLs of streaming replicas) takes searches, recalls and listings
    to a replica once it has replayed this handle's writes (docs/fleet.md). With
    no location, home or profile given at all, $SESSIONDB_URL, when set, is the location.

    Testing hooks, left None in real use: `vfs` names a registered SQLite VFS (an
    `apsw.VFS`) every connection goes through, so tests can inject I/O errors or record
    writes and syncs (tests/reliability/vfs.py); `clock` is the time source of the handle.
    """
    if vfs is not None:
        options["vfs"] = vfs
    return locations.open_store(location, home=home, profile=profile, clock=clock, limits=limits,
                                durability=durability, patience=patience, **options)


def open_async_store(*args, **kwargs) -> AsyncStore:
    """`open_store`, as an AsyncStore whose methods are coroutines with the same names."""
    return AsyncStore(open_store(*args, **kwargs))


def open_doctor(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
) -> Doctor:
    """The doctor of a store (`examine`, `repair`, `holders`), which never opens it as a store."""
    return locations.open_doctor(location, home=home, profile=profile)


