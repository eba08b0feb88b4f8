"""The APSW boundary: every APSW error becomes a sessiondb error before it reaches a caller."""

from __future__ import annotations

import os
from pathlib import Path

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


_READ_ONLY = (errors.ReadOnlyStore, "the store cannot be opened for writing: its file, directory or filesystem "
                                   "is read-only")


def convert(exc: BaseException, path: Path | None = None) -> BaseException:
    """The sessiondb error for `exc`; non-APSW exceptions are returned unchanged. `path`,
    the store's file when known, tells a read-only place from a missing one."""
    if not isinstance(exc, apsw.Error):
        return exc
    kind = _READ_ONLY if path is not None and isinstance(exc, apsw.CantOpenError) and _read_only(path) \
        else _kind_of(exc)
    error = kind[0](f"{kind[1]} ({exc})") if kind else errors.StorageError(f"the storage layer failed: {exc}")
    error.__cause__ = exc
    return error


def _read_only(path: Path) -> bool:
    """Whether this process may not write the store's directory or its existing files (a
    read-only mount says so to root as well)."""
    places = [path.parent] + [p for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists()]
    return path.parent.exists() and not all(os.access(p, os.W_OK) for p in places)


def _kind_of(exc: apsw.Error) -> tuple[type[errors.SessionDBError], str] | None:
    if isinstance(exc, apsw.IOError) and errors.classify(exc) is errors.Cause.DISK_FULL:
        return _SHM_FULL
    return next(((ours, advice) for apsw_class, ours, advice in _BY_CLASS if isinstance(exc, apsw_class)), None)
