"""The fleet backend: one schema per profile on a PostgreSQL server, through psycopg 3.

`open_backend` is what store/locations.py calls for `postgresql:` (and `postgres:`)
locations, `open_doctor` for its doctor (doctor.py), and `check_name`, `list_profiles`,
`delete_profile` and `shown_location` what it calls for the profiles a server holds
(profiles.py); this package, and with it psycopg, is imported only when such a store is
first used.
"""

from __future__ import annotations

from typing import Any, Callable

from ...model import SpoolReport, VerifyReport
from ..rows import Rows
from .doctor import ServerDoctor
from .profiles import check_name, delete_profile, list_profiles, shown_location
from .store import PostgresBackend

__all__ = ["PostgresBackend", "check_name", "delete_profile", "list_profiles", "open_backend", "open_doctor", "shown_location"]


def open_backend(url: str, *, profile: str | None, **options: Any) -> PostgresBackend:
    """A handle on `profile`'s store at the server `url` (options: schema, patience, pool_size)."""
    return PostgresBackend(url, profile=profile, **options)


def open_doctor(url: str, *, profile: str | None, command: str, replay: Callable[[], SpoolReport],
                checks: Callable[[Rows, int, VerifyReport], None]) -> ServerDoctor:
    """The doctor of `profile`'s store at the server `url` (doctor.py), judging the rows by
    `checks` (store/verify.py) besides the server's own."""
    return ServerDoctor(url, profile=profile, command=command, replay=replay, checks=checks)
