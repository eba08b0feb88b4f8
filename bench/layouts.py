"""WAL pages per one-message append for the message layouts the append path could have.

    .venv/bin/python bench/layouts.py

The target of 2.5 WAL pages per acknowledged append (docs/benchmarks.json, `make
bench-exact`) is a question of layout before it is one of code: every B-tree a commit
changes is at least one page of the WAL. This measures, with the counting VFS of
bench/exact.py and on a session already holding 3,000 messages, what each candidate costs
when one message is inserted and committed at a time (synchronous FULL, WAL), with a
fresh random uid per message as the store mints them:

- the store's layout as it is: the message table, its three indexes (uid identity, session
  order, the live rows), and the session row's counters updated by the same transaction;
- the same without the session row's update, and without each index in turn;
- the session order and the live rows served by one index over (session_id, state, id);
- the floor with identity kept: the table and the uid index alone;
- the messages clustered by session (WITHOUT ROWID, keyed by session and seq) beside the uid
  index;
- the table alone, without an index.

Nothing here is sessiondb's code path: it is the engine's cost of each layout, the part no
Python can take away, printed as a table.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import apsw

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import exact  # noqa: E402  (bench/ is not a package)

SESSION_UPDATE = ("UPDATE sessions SET message_count = message_count + 1, "
                  "last_activity_at = max(coalesce(last_activity_at, 0), ?) WHERE id = ?")
INSERT = ("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
          "VALUES (?, ?, ?, 'user', ?, ?)")
CLUSTERED = """
    CREATE TABLE clustered (
        session_id TEXT NOT NULL, seq INTEGER NOT NULL, id INTEGER NOT NULL, uid TEXT NOT NULL,
        role TEXT NOT NULL, content TEXT, parts TEXT, tool_calls TEXT, tool_call_id TEXT, tool_name TEXT,
        reasoning TEXT, finish_reason TEXT, token_count INTEGER, timestamp REAL NOT NULL, display_kind TEXT,
        state TEXT NOT NULL DEFAULT 'active',
        PRIMARY KEY (session_id, seq)
    ) STRICT, WITHOUT ROWID;
    CREATE UNIQUE INDEX clustered_uid ON clustered(session_id, uid);
"""
CLUSTERED_INSERT = ("INSERT INTO clustered(session_id, seq, id, uid, role, content, timestamp) "
                    "VALUES (?, ?, ?, ?, 'user', ?, ?)")

#: name -> (what to run on the store's schema first, the insert, whether the session row is updated)
LAYOUTS: dict[str, tuple[str, str, bool]] = {
    "as now, uids in time order": ("", INSERT, True),
    "as now: table, 3 indexes, session row updated": ("", INSERT, True),
    "as now without the session row's update": ("", INSERT, False),
    "without the live-rows index (messages_active)": ("DROP INDEX messages_active", INSERT, True),
    "without the session-order index (messages_session)": ("DROP INDEX messages_session", INSERT, True),
    "order and live rows in one index (session_id, state, id)":
        ("DROP INDEX messages_active; DROP INDEX messages_session; "
         "CREATE INDEX messages_order ON messages(session_id, state, id)", INSERT, True),
    "the same without the session row's update":
        ("DROP INDEX messages_active; DROP INDEX messages_session; "
         "CREATE INDEX messages_order ON messages(session_id, state, id)", INSERT, False),
    "table and uid index only, no session row update":
        ("DROP INDEX messages_active; DROP INDEX messages_session", INSERT, False),
    "clustered by (session_id, seq) with the uid index, no session row update": (CLUSTERED, CLUSTERED_INSERT, False),
    "table and uid index only, no session row update, uids in time order":
        ("DROP INDEX messages_active; DROP INDEX messages_session", INSERT, False),
    "table alone, no index, no session row update":
        ("DROP INDEX messages_active; DROP INDEX messages_session; DROP INDEX messages_uid", INSERT, False),
}


def pages_per_append(setup: str, insert: str, update_session: bool, ordered: bool) -> float:
    """WAL pages per one-message append after exact.HISTORY of them, for one layout (its
    uids random, or `ordered` by the time they were minted)."""
    import sessiondb
    exact.hold_off_indexer()
    vfs = exact.wal_counter()
    bodies = exact.texts(exact.HISTORY + exact.COUNTED_APPENDS)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "state.db"
        with sessiondb.open_store(path) as store:
            sid = store.create_session("bench").id
        conn = apsw.Connection(str(path), vfs=exact.VFS_NAME)
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("PRAGMA synchronous=FULL")
        if setup:
            conn.execute(setup)
        clustered = insert == CLUSTERED_INSERT

        def append(seq: int, text: str) -> None:
            now = time.time()
            uid = f"{time.time_ns():016x}{os.urandom(8).hex()}" if ordered else os.urandom(16).hex()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(insert, (sid, seq, seq, uid, text, now) if clustered else (sid, uid, seq, text, now))
            if update_session:
                conn.execute(SESSION_UPDATE, (now, sid))
            conn.execute("COMMIT")

        for seq, text in enumerate(bodies[:exact.HISTORY], 1):
            append(seq, text)
        vfs.counting = True
        for seq, text in enumerate(bodies[exact.HISTORY:], exact.HISTORY + 1):
            append(seq, text)
        conn.close()
    vfs.unregister()
    return vfs.pages / exact.COUNTED_APPENDS


def main(measure: Callable[[str, str, bool, bool], float] = pages_per_append) -> None:
    print(f"WAL pages per one-message append, a session of {exact.HISTORY:,} messages, "
          f"{exact.COUNTED_APPENDS} appends counted")
    for name, (setup, insert, update_session) in LAYOUTS.items():
        print(f"{measure(setup, insert, update_session, 'time order' in name):6.2f}  {name}")


if __name__ == "__main__":
    main()
