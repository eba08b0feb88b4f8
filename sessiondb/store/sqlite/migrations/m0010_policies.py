"""Migration 0010_policies: what a store keeps, declared in the store (store/retention.py).

Frozen once released: never edit it; change the table with a new migration appended to MIGRATIONS.
One row per rule set or hold, keyed by what it applies to: `retention` (the profile's
rules), `retention:<source>` (one source's), `hold:user:<id>` and `hold:session:<id>`
(legal holds); `value` is its JSON. Every process applying the rules reads them here, so
a gateway, a cron job and the CLI apply the same ones.
"""

from __future__ import annotations

import apsw

NAME = "0010_policies"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        CREATE TABLE policies (
            key        TEXT PRIMARY KEY,
            value      TEXT NOT NULL,
            updated_at REAL NOT NULL
        ) STRICT;
        """
    )
