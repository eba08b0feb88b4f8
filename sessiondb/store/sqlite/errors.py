"""The APSW boundary: every APSW error becomes a sessiondb error before it reaches a caller."""

from __future__ import annotations

import apsw

from ... import errors

# Most specific first: APSW's exception classes do not inherit from one another by meaning.
_BY_CLASS: tuple[tuple[type[BaseException], type[errors.SessionDBError], str], ...] = (
    (apsw.BusyError, errors.StoreBusy,
     "the store stayed locked by another process past the patience budget; retry, or find "
     "the process holding it"),
    (apsw.LockedError, errors.StoreBusy, "the store is locked; retry"),
    (apsw.CorruptError, errors.StoreCorrupt,
     "the database file is damaged; stop writing to it and run `sessiondb doctor`"),
    (apsw.NotADBError, errors.StoreCorrupt,
     "the file is not a readable database; stop writing to it and run `sessiondb doctor`"),
    (apsw.FullError, errors.DiskFull, "the disk is full; free space, then retry"),
    (apsw.ReadOnlyError, errors.ReadOnlyStore,
     "the store is read-only; check the file's permissions and the filesystem"),
    (apsw.CantOpenError, errors.StorageError,
     "the database file cannot be opened; check that its directory exists and is writable"),
    (apsw.IOError, errors.StorageError, "an I/O error hit the store; check the disk, then retry"),
    (apsw.PermissionsError, errors.ReadOnlyStore, "permission denied on the store's files"),
)


# An extended code that names a full disk outranks its class (IOError): the -shm could
# not grow, which fails even a read.
_SHM_FULL = (errors.DiskFull, "the disk is full: even the shared-memory file beside the store cannot grow; "
                             "free space, then retry")


def convert(exc: BaseException) -> BaseException:
    """The sessiondb error for `exc`; non-APSW exceptions are returned unchanged."""
    if not isinstance(exc, apsw.Error):
        return exc
    kind = _kind_of(exc)
    error = kind[0](f"{kind[1]} ({exc})") if kind else errors.StorageError(f"the storage layer failed: {exc}")
    error.__cause__ = exc
    return error


def _kind_of(exc: apsw.Error) -> tuple[type[errors.SessionDBError], str] | None:
    if isinstance(exc, apsw.IOError) and errors.classify(exc) is errors.Cause.DISK_FULL:
        return _SHM_FULL
    return next(((ours, advice) for apsw_class, ours, advice in _BY_CLASS if isinstance(exc, apsw_class)), None)
