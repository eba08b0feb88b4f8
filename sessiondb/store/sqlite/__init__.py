"""The embedded backend: one SQLite file per profile, through APSW.

`open_backend` and `open_doctor` are what store/locations.py calls for `sqlite` locations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...model import SpoolReport
from .checkup import FileDoctor
from .store import SQLiteBackend

__all__ = ["SQLiteBackend", "FileDoctor", "open_backend", "open_doctor"]


def open_backend(path: Path, *, profile: str | None, **options: Any) -> SQLiteBackend:
    """A handle on the store file at `path` (options: durability, patience, vfs)."""
    return SQLiteBackend(path, profile=profile, **options)


def open_doctor(path: Path, *, profile: str | None, command: str, replay: Callable[[], SpoolReport],
                checks: Callable[..., None]) -> FileDoctor:
    """The doctor of the store file at `path` (the path is the profile's already). It judges
    the file and its holders, not the rows (Store.verify checks those), so `checks` is not its."""
    return FileDoctor(path, command=command, replay=replay)
