"""sessiondb: the durable memory of AI agents.

    import sessiondb
    with sessiondb.open_store() as store:
        s = store.create_session("cli", title="Fix the flaky test")
        store.append(s.id, [{"role": "user", "content": "why does it fail?"}])
        print(store.transcript(s.id))
"""

from __future__ import annotations

import os

from .errors import (
    Cause, Conflict, InvalidInput, MessageConflict, NotASessionStore, NotFound, SessionDBError,
    StorageError, StoreBusy, StoreClosed, TitleConflict, UnsupportedSQLite,
)
from .errors import CompactionBusy, CompressionClosed, LeaseLost, SessionTooLarge
from .home import DEFAULT_PROFILE, refuse_real_home_under_test, store_path, validate_profile
from .model import Message, MessageLimits, MessageState, Page, Role, Session, Usage
from .model import Lease
from .store.aio import AsyncStore
from .store.contract import Store

__all__ = [
    "open_store", "open_async_store", "Store", "AsyncStore", "Session", "Message", "Role",
    "MessageState", "Page", "Usage", "SessionDBError", "InvalidInput", "NotFound", "Conflict",
    "MessageConflict", "TitleConflict", "StoreBusy", "StoreClosed", "StorageError",
    "UnsupportedSQLite", "NotASessionStore", "Cause",
    "Lease", "MessageLimits", "CompactionBusy", "LeaseLost", "CompressionClosed", "SessionTooLarge",
]


def open_store(
    path: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    durability: str = "full",
    patience: float = 30.0,
    vfs: str | None = None,
    limits: MessageLimits = MessageLimits(),
) -> Store:
    """Open a profile's store (or the store file at `path`).

    `home` defaults to $SESSIONDB_HOME or ~/.sessiondb; the default profile's store is
    `<home>/state.db`, profile NAME's is `<home>/profiles/NAME/state.db`. durability
    "full" (the default) makes every acknowledged write survive power loss; "normal"
    survives the process dying only. `patience` is how long a write waits for another
    process's lock before StoreBusy. `limits` bounds one message, for append and import
    alike (MessageLimits: 16 MiB of content and 10,000 parts by default).

    `vfs` is a testing hook: the name of a registered SQLite VFS (an `apsw.VFS`) that
    every connection of the store goes through, so tests can inject I/O errors or record
    writes and syncs (tests/reliability/vfs.py). Leave it None in real use.
    """
    from .store.sqlite import SQLiteStore

    if profile is not None:
        validate_profile(profile)
    resolved = store_path(path, home=home, profile=profile)
    refuse_real_home_under_test(resolved)  # S-24: a test never opens the user's real store
    return SQLiteStore(
        resolved,
        profile=None if profile in (None, DEFAULT_PROFILE) else profile,
        durability=durability,
        patience=patience,
        vfs=vfs,
        limits=limits,
    )


def open_async_store(*args, **kwargs) -> AsyncStore:
    """`open_store`, as an AsyncStore whose methods are coroutines with the same names."""
    return AsyncStore(open_store(*args, **kwargs))
