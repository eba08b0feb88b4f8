"""Migration 0015_policies: what a store keeps, declared in the store (store/retention.py).

Frozen once released: never edit it; change the table with a new migration appended to MIGRATIONS.
One row per rule set or hold, keyed by what it applies to (as the embedded store's 0010).
"""

from __future__ import annotations

NAME = "0015_policies"

SQL = """
CREATE TABLE {schema}.policies (
    key        text PRIMARY KEY,
    value      text NOT NULL,
    updated_at double precision NOT NULL
);
"""
