"""The schema of a profile, as an ordered list of frozen migrations, and the runner.

Each migration is a module owning its SQL as a literal; once released it is never edited
or reordered (a change is a new module appended to MIGRATIONS). The runner holds a
transaction-scoped advisory lock of the database while it checks and applies them, so
ten processes opening the same new store at once migrate it once: the first applies,
the others wait on the lock and then find every migration recorded. An open of a store
already up to date reads its record and takes no lock. Each migration is
applied in the same transaction as the row recording it. A schema that records a
migration this release does not know was written by a newer sessiondb and is refused.
"""

from __future__ import annotations

import time

import psycopg
from psycopg import sql

from ....errors import NotASessionStore
from . import (
    m0001_core, m0002_turns, m0003_lease_holders, m0004_usage_calls, m0005_cheaper_indexing, m0006_hot_appends,
    m0007_uid_check_by_index, m0008_words_planned_once, m0009_batches_in_one_pass, m0010_profile_recorded,
    m0011_stems_and_scripts, m0012_reasoning_words, m0013_escaped_json, m0014_vectors, m0015_policies,
)

MIGRATIONS = [(m.NAME, m.SQL) for m in (m0001_core, m0002_turns, m0003_lease_holders, m0004_usage_calls,
                                          m0005_cheaper_indexing, m0006_hot_appends, m0007_uid_check_by_index,
                                          m0008_words_planned_once, m0009_batches_in_one_pass,
                                          m0010_profile_recorded, m0011_stems_and_scripts,
                                          m0012_reasoning_words, m0013_escaped_json, m0014_vectors,
                                          m0015_policies)]
#: One key for every schema of a database: the extensions they share are created once too.
LOCK_KEY = 0x5E55_10DB


def migrate(conn: psycopg.Connection, schema: str, extensions: str, profile: str | None = None) -> bool:
    """Bring `schema` up to date (creating it and the shared extensions); whether anything
    was applied. `profile` is the profile whose schema it is, None for a schema opened by
    its own name. `conn` is in autocommit mode; this opens its own transaction."""
    names = {"schema": sql.Identifier(schema), "ext": sql.Identifier(extensions), "profile": sql.Literal(profile)}
    if _recorded(conn, schema) == {name for name, _ in MIGRATIONS}:
        return False  # the common open: up to date, no lock taken (migrations are only ever added)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        applied = _applied(conn, schema)
        known = [name for name, _ in MIGRATIONS]
        unknown = applied - set(known)
        if unknown:
            raise NotASessionStore(
                f"the schema {schema} was written by a newer sessiondb (migration {sorted(unknown)[-1]}); "
                "upgrade sessiondb to open it")
        if applied == set(known):
            return False
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {ext}").format(**names))
        for extension in ("unaccent", "pg_trgm"):
            conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {} SCHEMA {ext}").format(
                sql.Identifier(extension), **names))
        try:  # pgvector, where the server has it and lets this role create it: vectors.py's fast scan
            with conn.transaction():
                conn.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS vector SCHEMA {ext}").format(**names))
        except psycopg.Error:
            pass  # an exact scan in SQL instead
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {schema}").format(**names))
        conn.execute(sql.SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.schema_migrations "
            "(name text PRIMARY KEY, applied_at double precision NOT NULL)").format(**names))
        for name, text in MIGRATIONS:
            if name in applied:
                continue
            with conn.transaction():
                conn.execute(sql.SQL(text).format(**names))
                conn.execute(sql.SQL("INSERT INTO {schema}.schema_migrations(name, applied_at) VALUES (%s, %s)")
                             .format(**names), (name, time.time()))
    return True


def _recorded(conn: psycopg.Connection, schema: str) -> set[str]:
    """The migrations `schema` records, read in one statement; empty when it has no record."""
    query = sql.SQL("SELECT name FROM {}").format(sql.Identifier(schema, "schema_migrations"))
    try:
        with conn.transaction():
            return {row[0] for row in conn.execute(query)}
    except psycopg.errors.UndefinedTable:
        return set()


def _applied(conn: psycopg.Connection, schema: str) -> set[str]:
    tables = {row[0] for row in conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))}
    if not tables:
        return set()
    if "schema_migrations" not in tables:
        raise NotASessionStore(
            f"the schema {schema} holds tables sessiondb did not create ({sorted(tables)[0]!r}); "
            "point sessiondb at its own schema")
    query = sql.SQL("SELECT name FROM {}.schema_migrations").format(sql.Identifier(schema))
    return {row[0] for row in conn.execute(query)}
