"""The fleet backend: one schema per profile on a PostgreSQL server, through psycopg 3.

`open_backend` is what store/locations.py calls for `postgresql:` (and `postgres:`)
locations; this package, and with it psycopg, is imported only when such a store is
first opened. There is no `open_doctor`: the server's own tools examine its storage.
"""

from __future__ import annotations

from typing import Any

from .store import PostgresBackend

__all__ = ["PostgresBackend", "open_backend"]


def open_backend(url: str, *, profile: str | None, **options: Any) -> PostgresBackend:
    """A handle on `profile`'s store at the server `url` (options: schema, patience, pool_size)."""
    return PostgresBackend(url, profile=profile, **options)
