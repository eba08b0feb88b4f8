"""One exception tree for everything sessiondb raises.

Backends convert their driver's errors (APSW, psycopg) into these at their boundary, so
callers never see a driver exception. Every error carries a `cause`: a short, stable name
of what went wrong that the CLI, the HTTP service and guidance key their rendering on.
"""

from __future__ import annotations

import re
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
    # Causes a database server brings (the PostgreSQL backend).
    UNREACHABLE = "unreachable"
    UNAVAILABLE = "unavailable"
    AUTH_FAILED = "auth_failed"
    SERVER_DISK_FULL = "server_disk_full"
    STANDBY = "standby"
    STATEMENT_TIMEOUT = "statement_timeout"
    POOLER_MODE = "pooler_mode"
    UNKNOWN = "unknown"


class SessionDBError(Exception):
    """Root of every error sessiondb raises."""

    cause: Cause = Cause.UNKNOWN


class InvalidInput(SessionDBError, ValueError):
    """The caller's input was refused before anything was written."""


class MetadataTooLarge(InvalidInput):
    """A session's metadata, or one of its values, is past its MessageLimits bound (an
    importer then writes the session without the largest values)."""


class NotFound(SessionDBError, LookupError):
    """A session (or other named thing) does not exist."""


class Conflict(SessionDBError):
    """The write contradicts what is already stored; nothing was written."""


class MessageConflict(Conflict):
    """A message uid is already stored in the session with different content."""


class TitleConflict(Conflict):
    """Another session already has this title."""


class SessionExists(Conflict):
    """A session with this id is already stored."""


class CompactionBusy(Conflict):
    """Another live compaction lease is held on the session; nothing was written."""

    cause = Cause.COMPRESSION_BUSY


class LeaseLost(Conflict):
    """The compaction lease expired, was released or was taken over; nothing was written.

    A compaction that lost its lease cannot publish: begin a new one on fresh messages.
    """

    cause = Cause.COMPRESSION_BUSY


class CompressionClosed(Conflict):
    """The session was closed by a compaction that rotated it, and no live session continues it.

    The write went nowhere; refresh the session (load its latest continuation, or start a
    new one) and write there.
    """

    cause = Cause.COMPRESSION_CLOSED


class CheckpointRefused(Conflict):
    """A checkpoint, diff or restore was refused; nothing was written (S-53).

    The message says why: the agent's tools run where host paths are not theirs (a
    container or sandbox), the tree is over the size limits, or a restore would overwrite
    files changed since the agent's own last write (`report` then lists every file).
    """

    def __init__(self, message: str, report: object = None) -> None:
        super().__init__(message)
        self.report = report


class SessionTooLarge(SessionDBError):
    """An in-memory copy of the session was refused: it holds more messages than the guard.

    `limit` is the guard that refused it, `count` what the session holds and `session_id`
    the session refused (the live tip, for a resume), when known.
    """

    def __init__(self, message: str, *, limit: int | None = None, count: int | None = None,
                 session_id: str | None = None) -> None:
        super().__init__(message)
        self.limit = limit
        self.count = count
        self.session_id = session_id


class RealHomeRefused(SessionDBError):
    """A process running under a test tried to open the user's real store (S-24)."""


class StoreClosed(SessionDBError):
    """The store handle was closed; open a new one."""


class UnsupportedSQLite(SessionDBError):
    """The SQLite library is too old or has a known data-loss bug."""


class NotASessionStore(SessionDBError):
    """The file is a database, but not one of sessiondb's (or from a newer release)."""


class StorageError(SessionDBError):
    """The storage layer failed (I/O, full disk, corruption, permissions).

    At the library's boundary its message becomes the sentence a person reads for its cause,
    naming the store and the first step (guidance.tell); `detail` then keeps what the
    failing layer said, which its traceback shows as a note.
    """

    detail: str | None = None


class StoreBusy(StorageError):
    """Another process kept the store locked longer than the patience budget."""

    cause = Cause.LOCKED


class DiskFull(StorageError):
    cause = Cause.DISK_FULL


class ReadOnlyStore(StorageError):
    cause = Cause.READ_ONLY


class StoreCorrupt(StorageError):
    cause = Cause.CORRUPT


class StoreDamaged(StorageError):
    """The store's file was replaced, lost its WAL, or is corrupt: writes to it stop.

    The refusal is sticky for the file in this process. `spooled_to` names the file that
    kept the refused messages, when there were any.
    """

    def __init__(self, message: str, cause: Cause, spooled_to: str | None = None) -> None:
        super().__init__(message)
        self.cause = cause
        self.spooled_to = spooled_to

    @classmethod
    def spooled(cls, error: "StorageError", spooled_to: str) -> "StoreDamaged":
        """The refusal of an append whose messages were kept in the spool file `spooled_to`."""
        return cls(f"{error} Nothing was lost: the messages were kept in {spooled_to}.", error.cause, spooled_to)


class ServerUnreachable(StorageError):
    """The database server could not be reached (or stayed down) within the patience budget."""

    cause = Cause.UNREACHABLE


class Unavailable(ServerUnreachable):
    """The database server was unavailable during a write and stayed away past the patience
    budget: the write may or may not be stored (an attempt may have committed just before
    its connection broke). Retrying it stores it once: writes are idempotent by uid."""

    cause = Cause.UNAVAILABLE


class AuthenticationFailed(StorageError):
    """The database server refused the credentials or the role has no access."""

    cause = Cause.AUTH_FAILED


class ServerDiskFull(DiskFull):
    """The database server's disk is full; the transaction was rolled back."""

    cause = Cause.SERVER_DISK_FULL


class ReadOnlyStandby(ReadOnlyStore):
    """The server is a read-only standby (a replica, or a primary in recovery)."""

    cause = Cause.STANDBY


class StatementTimeout(StorageError):
    """The server cancelled a statement that ran past its statement_timeout."""

    cause = Cause.STATEMENT_TIMEOUT


class PoolerMode(StorageError):
    """A connection pooler between sessiondb and the server runs in a mode that refuses
    what sessiondb needs (transactions); the message names the setting to change."""

    cause = Cause.POOLER_MODE


#: Causes that stop writes to a file for good in this process: refused appends are spooled.
DAMAGE_CAUSES = frozenset({Cause.CORRUPT, Cause.REPLACED, Cause.DELETED_WAL})


class StoreHeld(SessionDBError):
    """Maintenance refused: other processes hold the store (`holders` lists them)."""

    def __init__(self, message: str, holders: list) -> None:
        super().__init__(message)
        self.holders = holders


# --- classification -------------------------------------------------------------------

# SQLite primary result codes (the low byte of an extended code).
_SQLITE_CODES = {5: Cause.LOCKED, 6: Cause.LOCKED, 8: Cause.READ_ONLY, 11: Cause.CORRUPT,
                 13: Cause.DISK_FULL, 23: Cause.READ_ONLY, 26: Cause.CORRUPT}
_SQLITE_CORRUPT_VTAB = 267
# Extended codes whose primary code (IOERR) says less than they do: the -shm could not
# grow (SQLITE_IOERR_SHMSIZE), which on a full disk fails even a read.
_SQLITE_EXTENDED = {4874: Cause.DISK_FULL}
_ERRNO_CAUSES = {28: Cause.DISK_FULL, 122: Cause.DISK_FULL, 30: Cause.READ_ONLY, 13: Cause.READ_ONLY,
                 1: Cause.READ_ONLY}
# Message fragments, most specific first. Corruption is matched before disk-full because
# "database disk image is malformed" mentions a disk (S-17).
_TEXT_CAUSES = (
    ("malformed", Cause.CORRUPT),
    ("not a database", Cause.CORRUPT),
    ("corrupt", Cause.CORRUPT),
    ("disk is full", Cause.DISK_FULL),
    ("no space left", Cause.DISK_FULL),
    ("database is locked", Cause.LOCKED),
    ("database table is locked", Cause.LOCKED),
    ("readonly", Cause.READ_ONLY),
    ("read-only", Cause.READ_ONLY),
)
#: sessiondb's full-text objects: the FTS5 tables and their shadow tables. Corruption that
#: reaches us with no result code and whose text names one of them, exactly, is the index's
#: (S-16); a word that merely contains "fts" ("drafts") names another object.
FTS_TABLES = ("messages_fts", "messages_trigram")
FTS_OBJECTS = frozenset(t + s for t in FTS_TABLES for s in ("", "_data", "_idx", "_docsize", "_config", "_content"))
_NAMES = re.compile(r"[a-z0-9_]+")
# A garbled schema entry is the schema's damage even when the entry is an index's: no
# statement can be prepared until it is repaired, so writing on without the index cannot help.
_SCHEMA_DAMAGE = "malformed database schema"


def _names_the_index(text: str) -> bool:
    return _SCHEMA_DAMAGE not in text and not FTS_OBJECTS.isdisjoint(_NAMES.findall(text))


def classify(exc: BaseException) -> Cause:
    """The cause of a failure (S-17): a result code outranks message text; corruption
    outranks disk; damage is the index's only when SQLite says so (SQLITE_CORRUPT_VTAB) or,
    with no result code at all, when the text reports corruption and names an FTS object.
    A bare SQLITE_CORRUPT or SQLITE_NOTADB fails closed as `corrupt`, whatever it names."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        cause = _classify_one(exc)
        if cause is not Cause.UNKNOWN:
            return cause
        exc = exc.__cause__ or exc.__context__
    return Cause.UNKNOWN


def _classify_one(exc: BaseException) -> Cause:
    if isinstance(exc, SessionDBError):
        # Our own errors say their cause; their text may quote a caller's words (a
        # session id, a title), which must never read as a disk or database failure.
        return exc.cause
    text = str(exc).lower()
    code = getattr(exc, "extendedresult", None) or getattr(exc, "result", None)
    coded = isinstance(code, int) and code > 0
    if coded:
        if code == _SQLITE_CORRUPT_VTAB:
            return Cause.FTS_INDEX
        cause = _SQLITE_EXTENDED.get(code) or _SQLITE_CODES.get(code & 0xFF)
        if cause is not None:
            return cause
    if isinstance(exc, OSError) and exc.errno in _ERRNO_CAUSES:
        return _ERRNO_CAUSES[exc.errno]
    for fragment, cause in _TEXT_CAUSES:
        if fragment in text:
            if cause is Cause.CORRUPT and not coded and _names_the_index(text):
                return Cause.FTS_INDEX
            return cause
    return Cause.UNKNOWN
