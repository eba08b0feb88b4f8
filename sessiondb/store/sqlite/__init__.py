"""The embedded backend: one SQLite file per profile, through APSW."""

from .store import SQLiteStore

__all__ = ["SQLiteStore"]
