"""Migration 0010_profile_recorded, released: each profile's schema records the profile's
name, so the profiles on a server can be listed by name.

Frozen: never edit it; change the schema with a new migration appended to MIGRATIONS.

A profile's schema is named after it (`connect.schema_for`), but not always reversibly:
a '-' becomes '_' and a name too long for PostgreSQL keeps its start and gains a hash, so
`sessiondb_work_bot_0a1b2c3d4e` alone cannot say which profile it serves. The name goes
into `store_meta` under `profile` (`{profile}` is the profile the opening handle names,
NULL for a schema opened by its own name rather than a profile's, which records nothing).
A schema upgraded by a sessiondb opening it by that profile records it then.
"""

from __future__ import annotations

NAME = "0010_profile_recorded"

SQL = """
INSERT INTO {schema}.store_meta(key, value)
    SELECT 'profile', name FROM (SELECT {profile}::text AS name) AS given WHERE name IS NOT NULL
ON CONFLICT (key) DO NOTHING;
"""
