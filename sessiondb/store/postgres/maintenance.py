"""Maintenance of a profile's schema: prune, and the server's own ANALYZE and VACUUM.

On a server none of these needs the store to itself: a DELETE, an ANALYZE or a (plain)
VACUUM runs while other processes keep writing, so unlike a file's rewrite nothing is
refused while the store is held. Backups are the server's business (pg_dump, base
backups), so `backup` is refused with the command to use.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

from .. import commands as cmd

NEVER_ACTIVE_FLOOR_DAYS = 30  # a session opened by a key and never used is pruned after this (S-40)
TABLES = ("sessions", "messages", "usage", "usage_calls", "turns", "compaction_leases", "gateway_routes",
          "message_vectors", "vectors_wanted")
#: What a forget cannot reach on a server (store/forgetting.py), said in its receipt.
SERVER_KEEPS = (
    "PostgreSQL: the rows are deleted and their tables vacuumed, which frees their space for reuse without "
    "overwriting it at once; the server's write-ahead log, its WAL archive and its base backups keep the erased "
    "rows until they are recycled or expire: take a new base backup and drop the older ones and their archived "
    "WAL to finish the erasure there")

_NEVER_ACTIVE = (
    "SELECT id FROM sessions AS s WHERE ended_at IS NULL AND session_key IS NOT NULL AND message_count = 0 "
    "AND tool_call_count = 0 AND last_activity_at IS NULL AND title IS NULL AND pinned = 0 AND archived = 0 "
    "AND started_at < %s AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.session_id = s.id) "
    "AND NOT EXISTS (SELECT 1 FROM usage AS u WHERE u.session_id = s.id)")


def _selections(command: cmd.Prune) -> list[tuple[str, tuple[Any, ...]]]:
    queries = []
    if command.inactive_before is not None:
        # The minute's bound is implied by the time's; the recent-activity index serves it (migration 0006).
        older = ("SELECT id FROM sessions WHERE coalesce(last_activity_at, started_at) < %s "
                 "AND active_minute <= floor(%s / 60)")
        older += "" if command.include_pinned else " AND pinned = 0"
        older += "" if command.include_archived else " AND archived = 0"
        queries.append((older, (command.inactive_before, command.inactive_before)))
    if command.never_active_at is not None:
        queries.append((_NEVER_ACTIVE, (command.never_active_at - NEVER_ACTIVE_FLOOR_DAYS * 86400,)))
    return queries


def prune(conn: psycopg.Connection, command: cmd.Prune) -> list[str]:
    """The sessions matching the command, sorted; deleted (with their routing entries, so a
    gateway never routes a key to a pruned session) unless it is a dry run."""
    ids = sorted({row[0] for query, params in _selections(command) for row in conn.execute(query, params)}
                 - command.exempt)
    if ids and not command.dry_run:
        conn.execute("DELETE FROM sessions WHERE id = ANY(%s)", (ids,))
        conn.execute("DELETE FROM gateway_routes WHERE session_id = ANY(%s)", (ids,))
    return ids


def run_each_table(conn: psycopg.Connection, schema: str, statement: str) -> None:
    """ANALYZE or VACUUM every table of the schema (outside a transaction: VACUUM needs it;
    named by schema, as a connection through a pooler has no search_path of its own)."""
    for table in TABLES:
        conn.execute(sql.SQL(statement + " {}").format(sql.Identifier(schema, table)))


def backup_refusal(schema: str, destination: Any) -> str:
    return (f"a PostgreSQL store is backed up by the server's tools, not by sessiondb: "
            f"`pg_dump --schema={schema} -Fc -f {destination} DBNAME` (or a base backup of the server); "
            "`sessiondb sessions export` writes the portable format")
