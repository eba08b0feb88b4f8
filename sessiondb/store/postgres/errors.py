"""The psycopg boundary: every driver error becomes a sessiondb error before a caller sees it.

Errors are classified by SQLSTATE (the server's own code), never by message text. Some
failures are worth retrying as a whole unit of work (a connection killed while idle, a
server restarting, a deadlock or serialization failure): `retryable` says which. Retrying
is safe because appends and imports are idempotent by uid.
"""

from __future__ import annotations

import psycopg
from psycopg import errors as pg
from psycopg_pool import PoolTimeout

from ... import errors

#: SQLSTATE classes and codes a retry of the whole unit of work can cure.
_RETRY_CLASSES = ("08",)  # connection exceptions
_RETRY_CODES = frozenset({
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "57P01",  # admin_shutdown: the server is stopping or restarting
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now: starting up or shutting down
})
_AUTH_CODES = frozenset({"28000", "28P01", "42501"})  # invalid authorization, bad password, no privilege
_DISK_CODES = frozenset({"53100"})  # disk_full
_STANDBY_CODES = frozenset({"25006"})  # read_only_sql_transaction: a hot standby
_TIMEOUT_CODES = frozenset({"57014"})  # query_canceled (statement_timeout)


# A refused connection carries no SQLSTATE (libpq reports it before any result), only the
# server's FATAL message: these fragments are how libpq words a refusal of who we are.
_AUTH_TEXT = ("authentication failed", "role \"", "no pg_hba.conf entry", "permission denied for database",
              "password authentication", "password is required")


def refused_us(exc: BaseException) -> bool:
    """Whether the server refused the connection's credentials (never worth retrying)."""
    code = getattr(exc, "sqlstate", None)
    if code in _AUTH_CODES:
        return True
    text = str(exc)
    return code is None and isinstance(exc, psycopg.OperationalError) and any(f in text for f in _AUTH_TEXT)


def retryable(exc: BaseException) -> bool:
    """Whether running the same unit of work again, on a fresh connection, may succeed."""
    if isinstance(exc, PoolTimeout) or refused_us(exc):
        return False
    code = getattr(exc, "sqlstate", None)
    if code is not None:
        return code in _RETRY_CODES or code.startswith(_RETRY_CLASSES)
    # No SQLSTATE: the connection broke (server gone, socket closed) or could not be made.
    return isinstance(exc, psycopg.OperationalError)


def refused_write(exc: BaseException) -> bool:
    """Whether the server refused a write for being read-only (a standby, or a primary
    fenced read-only): nothing of the transaction was committed."""
    return getattr(exc, "sqlstate", None) in _STANDBY_CODES


def connection_lost(exc: BaseException) -> bool:
    """Whether `exc` broke the connection under a unit of work, which the server may have
    committed before the break was seen (a transaction it aborted was not committed)."""
    return retryable(exc) and not (getattr(exc, "sqlstate", None) or "").startswith("40")


def unavailable(error: errors.SessionDBError, store: str) -> errors.Unavailable:
    """What a write stopped by the server's absence says: it may or may not be stored."""
    detail = str(error)
    refusal = errors.Unavailable(
        f"the server of {store} stayed unavailable past the patience budget ({detail}): the write may or may "
        "not be stored; retrying stores it once (messages are matched by uid)")
    refusal.__cause__ = error.__cause__ or error
    return refusal


def convert(exc: BaseException, location: str, *, away: bool = False) -> BaseException:
    """The sessiondb error for `exc` (driver errors only; others are returned unchanged).
    A pool timeout is StoreBusy unless the pool could not connect (`away`)."""
    if isinstance(exc, PoolTimeout) and away:
        error: errors.SessionDBError = errors.ServerUnreachable(
            f"the server of {location} could not be reached: the pool's attempts to connect failed")
    elif isinstance(exc, PoolTimeout):
        error = errors.StoreBusy(
            f"every connection of this process's pool to {location} stayed busy past the patience "
            "budget; nothing was written, retry, or give the store a larger pool (pool_size)")
    elif not isinstance(exc, psycopg.Error):
        return exc
    else:
        error = _classified(exc, location)
    error.__cause__ = exc
    return error


def _classified(exc: psycopg.Error, location: str) -> errors.SessionDBError:
    code = exc.sqlstate or ""
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if refused_us(exc):
        return errors.AuthenticationFailed(f"the server of {location} refused the credentials ({detail})")
    if code in _DISK_CODES:
        return errors.ServerDiskFull(f"the server of {location} has no disk space left ({detail})")
    if code in _STANDBY_CODES:
        return errors.ReadOnlyStandby(f"the server of {location} is a read-only standby ({detail})")
    if code in _TIMEOUT_CODES:
        return errors.StatementTimeout(f"the server of {location} cancelled a statement ({detail})")
    if isinstance(exc, pg.DataCorrupted | pg.IndexCorrupted):
        return errors.StoreCorrupt(f"the server of {location} reports damaged data ({detail})")
    if code.startswith("40"):
        return errors.StoreBusy(f"the server of {location} kept aborting the transaction ({detail}); retry")
    if retryable(exc):
        return errors.ServerUnreachable(f"the server of {location} could not be reached ({detail})")
    return errors.StorageError(f"the database server failed a statement: {detail}")
