"""Maintenance of a profile's schema: the server's own ANALYZE and VACUUM.

On a server neither needs the store to itself: an ANALYZE or a (plain)
VACUUM runs while other processes keep writing, so unlike a file's rewrite nothing is
refused while the store is held. Backups are the server's business (pg_dump, base
backups), so `backup` is refused with the command to use.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

TABLES = ("sessions", "messages", "usage", "usage_calls", "turns", "compaction_leases", "gateway_routes",
          "message_vectors", "vectors_wanted")

#: What a forget cannot reach on a server (store/forgetting.py), said in its receipt.
SERVER_KEEPS = (
    "PostgreSQL: the rows are deleted and their tables vacuumed, which frees their space for reuse without "
    "overwriting it at once; the server's write-ahead log, its WAL archive and its base backups keep the erased "
    "rows until they are recycled or expire: take a new base backup and drop the older ones and their archived "
    "WAL to finish the erasure there")


def run_each_table(conn: psycopg.Connection, schema: str, statement: str) -> None:
    """ANALYZE or VACUUM every table of the schema (outside a transaction: VACUUM needs it;
    named by schema, as a connection through a pooler has no search_path of its own)."""
    for table in TABLES:
        conn.execute(sql.SQL(statement + " {}").format(sql.Identifier(schema, table)))


def backup_refusal(schema: str, destination: Any) -> str:
    return (f"a PostgreSQL store is backed up by the server's tools, not by sessiondb: "
            f"`pg_dump --schema={schema} -Fc -f {destination} DBNAME` (or a base backup of the server); "
            "`sessiondb sessions export` writes the portable format")
