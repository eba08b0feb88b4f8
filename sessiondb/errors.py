"""One exception tree for everything sessiondb raises.

Backends convert their driver's errors (APSW, psycopg) into these at their boundary, so
callers never see a driver exception. Every error carries a `cause`: a short, stable name
of what went wrong that the CLI, the HTTP service and guidance key their rendering on.
"""

from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """What went wrong, as a stable name; values are exactly the names printed and sent."""

    LOCKED = "locked"
    DISK_FULL = "disk_full"
    READ_ONLY = "read_only"
    CORRUPT = "corrupt"
    FTS_INDEX = "fts_index"
    REPLACED = "replaced"
    DELETED_WAL = "deleted_wal"
    COMPRESSION_BUSY = "compression_busy"
    COMPRESSION_CLOSED = "compression_closed"
    UNKNOWN = "unknown"


class SessionDBError(Exception):
    """Root of every error sessiondb raises."""

    cause: Cause = Cause.UNKNOWN


class InvalidInput(SessionDBError, ValueError):
    """The caller's input was refused before anything was written."""


class NotFound(SessionDBError, LookupError):
    """A session (or other named thing) does not exist."""


class Conflict(SessionDBError):
    """The write contradicts what is already stored; nothing was written."""


class MessageConflict(Conflict):
    """A message uid is already stored in the session with different content."""


class TitleConflict(Conflict):
    """Another session already has this title."""


class StoreClosed(SessionDBError):
    """The store handle was closed; open a new one."""


class UnsupportedSQLite(SessionDBError):
    """The SQLite library is too old or has a known data-loss bug."""


class NotASessionStore(SessionDBError):
    """The file is a database, but not one of sessiondb's (or from a newer release)."""


class StorageError(SessionDBError):
    """The storage layer failed (I/O, full disk, corruption, permissions)."""


class StoreBusy(StorageError):
    """Another process kept the store locked longer than the patience budget."""

    cause = Cause.LOCKED


class DiskFull(StorageError):
    cause = Cause.DISK_FULL


class ReadOnlyStore(StorageError):
    cause = Cause.READ_ONLY


class StoreCorrupt(StorageError):
    cause = Cause.CORRUPT
