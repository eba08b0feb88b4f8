"""The schema, as an ordered list of small named migrations, and the runner that applies them.

Each migration is a module of this package that owns its SQL as literals: once released,
a migration is frozen (never edited, never reordered), because the stores that ran it
keep what it built and the doctor checks a store against exactly the migrations it
records (tests/migrations holds a snapshot of each released version's schema). A change
to the schema, the search index included, is a new module appended to MIGRATIONS.

Each migration is applied in its own IMMEDIATE transaction together with the row that
records it, so a crash leaves it either wholly applied or not at all, and two processes
opening a new file at once cannot apply it twice. A file that records a migration this
release does not know was written by a newer sessiondb and is refused rather than guessed
at.
"""

from __future__ import annotations

import time
from typing import Callable, Sequence

import apsw

from ....errors import NotASessionStore
from ..connect import APPLICATION_ID, transaction
from . import (
    m0001_core, m0002_search, m0003_lineage, m0004_gateway_routing, m0005_turns, m0006_search_off_path,
    m0007_usage_calls, m0008_escaped_text, m0009_active_minute, m0010_policies,
)

Migration = tuple[str, Callable[[apsw.Connection], None]]

MIGRATIONS: list[Migration] = [
    (m.NAME, m.apply) for m in (
        m0001_core, m0002_search, m0003_lineage, m0004_gateway_routing, m0005_turns, m0006_search_off_path,
        m0007_usage_calls, m0008_escaped_text, m0009_active_minute, m0010_policies,
    )
]

# The first migration under its name before the split into modules (tests build a
# version-0001 file with it).
_core = m0001_core.apply


def migrate(conn: apsw.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> bool:
    """Bring the file's schema up to date, refusing files that are not ours.

    `migrations` is the list to apply: a prefix of MIGRATIONS builds a file as an earlier
    release made it. Returns whether anything was applied.
    """
    check_ownership(conn)
    known = [name for name, _ in migrations]
    applied = _applied(conn)
    unknown = applied - set(known)
    if unknown:
        raise NotASessionStore(
            f"the store was written by a newer sessiondb (migration {sorted(unknown)[-1]}); "
            "upgrade sessiondb to open it"
        )
    if applied == set(known):
        return False
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT"
    )
    for name, apply in migrations:
        if name in applied:
            continue
        with transaction(conn, "BEGIN IMMEDIATE"):
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (name,)).fetchone():
                continue  # another process applied it while we waited for the lock
            apply(conn)
            conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)", (name, time.time()))
    return True


def _applied(conn: apsw.Connection) -> set[str]:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone()
    if not exists:
        return set()
    return {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}


def check_ownership(conn: apsw.Connection) -> None:
    # One statement, so one snapshot: read apart, a first migration committed by another
    # process in between would show its tables without its application id.
    app_id, foreign = conn.execute(
        "SELECT (SELECT application_id FROM pragma_application_id()), "
        "(SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT IN ('schema_migrations') "
        "AND name NOT LIKE 'sqlite_%' LIMIT 1)"
    ).fetchone()
    if app_id == APPLICATION_ID:
        return
    if app_id != 0:
        raise NotASessionStore(f"the file belongs to another application (application_id {app_id:#x})")
    if foreign:
        raise NotASessionStore(
            f"the file is a database that sessiondb did not create (it has a table {foreign!r}); "
            "point sessiondb at its own store"
        )
