"""Through a connection pooler: telling one is there, and keeping nothing on its connections.

A pooler in transaction mode (pgbouncer's `pool_mode = transaction`, and its kind) hands
each transaction of a client to whichever server connection is free, and one server
connection serves the transactions of many clients. Whatever a client leaves on a server
connection between its transactions is lost to it and found by another client: a session
`SET` (the schema on the search_path, synchronous_commit), a server-side prepared
statement (psycopg prepares a query it ran five times, under a name another client's
psycopg also uses), a session advisory lock, a LISTEN. So through a pooler a store keeps
none: its search_path and synchronous_commit are set with each transaction for that
transaction only (`pin`), the one-statement append names its function by schema and sets
its durability within its own statement (messages.py), and no statement is prepared on
the server. Advisory locks are transaction-scoped everywhere, and sessiondb listens for
nothing.

A pooler is seen at open: the process id a connection is given when it starts (the
cancel key) is the server process's own on a direct connection, and one the pooler made
up through it. A pooler in statement mode refuses the transactions every write needs:
it is named at open, with the setting to change.
"""

from __future__ import annotations

import psycopg

from ...errors import PoolerMode

#: The search_path and the synchronous_commit of one transaction, set within it.
PIN = "SELECT set_config('search_path', %s, true), set_config('synchronous_commit', %s, true)"


def behind_pooler(conn: psycopg.Connection, location: str) -> bool:
    """Whether `conn` (autocommit) reaches the server through a pooler; PoolerMode when
    that pooler refuses transactions."""
    pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    if pid == conn.info.backend_pid:
        return False
    try:
        with conn.transaction():
            conn.execute("SELECT 1")
    except psycopg.errors.ProtocolViolation as exc:  # statement mode refuses BEGIN itself
        raise PoolerMode(
            f"the connection pooler in front of {location} refuses transactions (pgbouncer in statement mode: "
            "pool_mode = statement), and every write of sessiondb is one; set pool_mode = transaction (or "
            "session) for this database in the pooler's configuration, reload it, and open the store again"
        ) from exc
    return True


def search_path(schema: str, extensions: str) -> str:
    """The search_path value naming the profile's schema, then the extensions' schema."""
    return f'"{schema}", "{extensions}"'


def pin(conn: psycopg.Connection, path: str, synchronous_commit: str) -> None:
    """Set the search_path and synchronous_commit for the transaction `conn` is in."""
    conn.execute(PIN, (path, synchronous_commit))
