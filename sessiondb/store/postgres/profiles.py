"""The profiles on one PostgreSQL server: each is a schema of the URL's database.

A profile's schema is named after it (`connect.schema_for`) and records the profile's
name (migration 0010), so the server's profiles are listed by name whatever the schema
had to be called. A schema upgraded from before 0010 and not yet opened by its profile
records nothing; it is listed by the name its schema spells, when that is reversible.

Deleting a profile drops its schema with every row in it. It is refused while another
sessiondb connection uses the schema, as a home's profile is refused while another
process holds its file: sessiondb's connections name their schema to the server
(`application_name`), so `pg_stat_activity` tells.
"""

from __future__ import annotations

import psycopg
from psycopg import sql

from ...errors import InvalidInput, NotFound, StoreHeld
from ...home import DEFAULT_PROFILE, validate_profile
from .connect import DEFAULT_PATIENCE, EXTENSIONS_SCHEMA, client_name, connect, schema_for, split_url

_PREFIX = "sessiondb_"
_CANDIDATES = (
    "SELECT nspname FROM pg_namespace WHERE (nspname = 'sessiondb' OR starts_with(nspname, 'sessiondb_')) "
    "AND nspname <> %s AND has_schema_privilege(oid, 'USAGE') "
    "AND to_regclass(format('%%I.store_meta', nspname)) IS NOT NULL "
    "AND to_regclass(format('%%I.schema_migrations', nspname)) IS NOT NULL ORDER BY nspname")
_LOCK_WAIT = "5s"  # how long a deletion waits for the schema's tables before it is refused


def check_name(profile: str) -> str:
    """`profile`, when it can name a profile on a server (a schema no other name opens);
    else InvalidInput, which says why."""
    schema_for(validate_profile(profile))
    return profile


def list_profiles(url: str) -> list[str]:
    """`main` (the server's default store, made when first opened), then every other
    profile on the server, sorted."""
    with _connection(url) as conn:
        return [DEFAULT_PROFILE] + sorted(n for n in _by_schema(conn).values() if n != DEFAULT_PROFILE)


def delete_profile(url: str, profile: str) -> str:
    """Drop the profile's schema with its sessions, messages and usage; the schema's name.

    NotFound when the server holds no such profile; StoreHeld while another sessiondb
    connection uses the schema (or holds one of its tables past a few seconds)."""
    validate_profile(profile)
    schema = schema_for(profile)
    location = shown_location(url)
    with _connection(url) as conn, conn.transaction():
        if _by_schema(conn).get(schema) != profile:
            raise NotFound(f"no profile {profile!r} on {location}")
        users = connections(conn, schema)
        if users:
            raise StoreHeld(f"delete refused: profile {profile!r} on {location} is in use by {', '.join(users)}; "
                            "close the stores open on it and run it again", users)
        conn.execute(sql.SQL("SET LOCAL lock_timeout = {}").format(sql.Literal(_LOCK_WAIT)))
        try:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))
        except psycopg.errors.LockNotAvailable:
            raise StoreHeld(f"delete refused: profile {profile!r} on {location} stayed in use for {_LOCK_WAIT}; "
                            "close the stores open on it and run it again", []) from None
    return schema


def connections(conn: psycopg.Connection, schema: str) -> list[str]:
    """sessiondb's connections on `schema` but `conn`, each as `server process PID (from ADDRESS)`."""
    return [f"server process {pid}" + (f" (from {addr})" if addr else "") for pid, addr in conn.execute(
        "SELECT pid, host(client_addr) FROM pg_stat_activity WHERE application_name = %s "
        "AND pid <> pg_backend_pid() ORDER BY pid", (client_name(schema),))]


def shown_location(url: str) -> str:
    """The server and database `url` names, without its password."""
    return split_url(url)[1]


def _connection(url: str) -> psycopg.Connection:
    conninfo, location, _ = split_url(url)
    return connect(conninfo, location, DEFAULT_PATIENCE)


def _by_schema(conn: psycopg.Connection) -> dict[str, str]:
    """Each sessiondb schema serving a profile -> that profile's name."""
    schemas = [row[0] for row in conn.execute(_CANDIDATES, (EXTENSIONS_SCHEMA,))]
    if not schemas:
        return {}
    recorded = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {}, (SELECT value FROM {} WHERE key = 'profile')").format(
            sql.Literal(schema), sql.Identifier(schema, "store_meta")) for schema in schemas)
    names = {}
    for schema, name in conn.execute(recorded):
        name = name or _spelled(schema)
        if name is not None:
            names[schema] = name
    return names


def _spelled(schema: str) -> str | None:
    """The profile a schema's name spells, where only that profile's schema is so named."""
    name = DEFAULT_PROFILE if schema == "sessiondb" else schema[len(_PREFIX):]
    try:
        return name if schema_for(validate_profile(name)) == schema else None
    except InvalidInput:
        return None
