"""Migration 0009_active_minute: an append's update of its session row leaves the
recent-sessions index as it was.

Frozen once released: never edit it; change the schema with a new migration appended to MIGRATIONS.
Every append updates its session's counters and `last_activity_at`. The recent-sessions
index (0001's `sessions_recent`) was over the activity time itself, so every append moved
the session's entry in it: one more index page written to the WAL per append (about 0.8
of 7, bench/exact.py). The listing order now comes from `active_minute`, the minute of
the activity time, a generated column (VIRTUAL: the only kind ALTER TABLE adds), indexed:
it changes at most once a minute per session, and an update that leaves an index's key as
it was leaves its page alone. Ordering by the minute first, then by the time itself, is
the same order, since the minute only grows with the time (store/sql.py's `recent` orders
and bounds a page so, as on PostgreSQL since its 0006_hot_appends). A stored time is never
before 1970, so the minute is the quotient cut toward zero (core SQL, readable by any
SQLite, where floor() needs the math functions).
"""

from __future__ import annotations

import apsw

NAME = "0009_active_minute"


def apply(conn: apsw.Connection) -> None:
    conn.execute(
        """
        DROP INDEX sessions_recent;
        ALTER TABLE sessions ADD COLUMN active_minute INTEGER
            GENERATED ALWAYS AS (CAST(coalesce(last_activity_at, started_at) / 60 AS INTEGER)) VIRTUAL;
        CREATE INDEX sessions_active_minute ON sessions(active_minute DESC);
        """
    )
