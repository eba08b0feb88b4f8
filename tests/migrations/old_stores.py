"""Stores as earlier releases made them: the first k migrations, applied by the migration
runner itself, then rows written with SQL that is valid at that version.

`ROWS` says what was written, so a test can check every row survived the migration to
the current schema.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import apsw

from sessiondb.store.sqlite.connect import configure_writer, connect
from sessiondb.store.sqlite.migrations import MIGRATIONS, migrate
from sessiondb.store.sql import to_stored

SCHEMA_DIR = Path(__file__).parent / "schema"
VERSIONS = [name for name, _ in MIGRATIONS]
CURRENT = len(MIGRATIONS)

PARENT, CHILD, ENDED = "20250101_000000_parent00", "20250101_000100_child000", "20250101_000200_ended000"
ROUTE_KEY = "agent:main:telegram:dm:42"

# (session, uid, role, content, parts, state); ids follow this order.
MESSAGES = [
    (PARENT, "p-sys", "system", "you keep a harbour log", None, "compacted"),
    (PARENT, "p-user", "user", "where is the harbour master", None, "compacted"),
    (PARENT, "p-parts", "assistant", None, json.dumps(["the harbour ", {"type": "text", "text": "opens at six"}]),
     "active"),
    (PARENT, "p-tool", "tool", "harbour tide table: high water 06:12", None, "active"),
    (PARENT, "p-rewound", "user", "a rewound harbour question", None, "rewound"),
    (CHILD, "c-summary", "assistant", "summary: the harbour opens at six", None, "active"),
    (CHILD, "c-cjk", "user", "東京の港はどこですか", None, "active"),
    (ENDED, "e-user", "user", "an ended conversation about lighthouses", None, "active"),
    # U+FFFE, the escape of store/sql.py, held as it was written before 0008_escaped_text
    (ENDED, "e-marker", "user", "kept as written: \ufffe0 \ufffe\ufffe \ufffeud83d\ufffe", None, "active"),
]


def schema_of(conn: apsw.Connection) -> str:
    """The schema as text, one entry per object in name order (rootpages left out)."""
    rows = sorted(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema"), key=lambda r: r[1])
    return "".join(f"-- {kind} {name} on {table}\n{sql};\n\n" for kind, name, table, sql in rows)


def snapshot(version: int) -> str:
    """The checked-in schema of the store made by the first `version` migrations."""
    return (SCHEMA_DIR / f"{VERSIONS[version - 1]}.sql").read_text()


def build(path: Path, version: int) -> Path:
    """A store file at schema `version` (1 = the first release), filled with ROWS."""
    conn = connect(path, patience=5.0)
    try:
        # Today's writer gives a new, empty file a map of its pages (auto_vacuum); no earlier
        # release did: the file gets its first page without one before the writer sees it.
        conn.execute("PRAGMA auto_vacuum=NONE")
        conn.execute("PRAGMA user_version=0")
        configure_writer(conn, path, "full", patience=5.0)
        migrate(conn, MIGRATIONS[:version])
        with conn:
            _fill(conn, version)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def _fill(conn: apsw.Connection, version: int) -> None:
    has_lineage = version >= 3  # 0003_lineage: parent_relation, compaction_leases
    sessions = [
        dict(id=PARENT, source="cli", title="Harbour log", model="gpt-x", started_at=100.0,
             last_activity_at=105.0, metadata=json.dumps({"topic": "harbour"}), pinned=1),
        dict(id=CHILD, source="telegram", profile="main", session_key=ROUTE_KEY, user_id="u1", chat_id="42",
             chat_type="dm", thread_id="t9", parent_session_id=PARENT, started_at=106.0, last_activity_at=108.0),
        dict(id=ENDED, source="cron", started_at=50.0, ended_at=60.0, end_reason="user_exit", archived=1,
             hidden=1, last_activity_at=55.0),
    ]
    if has_lineage:
        sessions[1]["parent_relation"] = "compression"
    for row in sessions:
        row["message_count"] = sum(1 for m in MESSAGES if m[0] == row["id"] and m[5] == "active")
        row["tool_call_count"] = 1 if row["id"] == PARENT else 0
        conn.execute(f"INSERT INTO sessions({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                     tuple(row.values()))
    escaped = version >= VERSIONS.index("0008_escaped_text") + 1  # text held through store/sql.py's codec
    for seq, (sid, uid, role, content, parts, state) in enumerate(MESSAGES, 1):
        tool = ("call-1", "tides") if role == "tool" else (None, None)
        conn.execute(
            "INSERT INTO messages(session_id, uid, seq, role, content, parts, tool_call_id, tool_name, "
            "token_count, timestamp, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (sid, uid, seq, role, to_stored(content) if escaped else content, parts, *tool, 7, 100.0 + seq, state))
    conn.execute("UPDATE messages SET tool_calls = ? WHERE uid = 'p-parts'",
                 (json.dumps([{"id": "call-1", "function": {"name": "tides", "arguments": "{}"}}]),))
    conn.execute(
        "INSERT INTO usage(session_id, model, provider, task, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, reasoning_tokens, cost_usd, calls) VALUES (?, 'gpt-x', 'openai', '', 120, 30, 10, "
        "5, 2, 0.25, 3)", (PARENT,))
    if has_lineage:
        conn.execute("UPDATE store_meta SET value = '1' WHERE key = 'compaction_token'")
        conn.execute(
            "INSERT INTO compaction_leases(session_id, token, watermark, holder, pid, host, ttl, acquired_at, "
            "expires_at) VALUES (?, 1, 4, 'old-compactor', ?, ?, 600, 100.0, 4102444800.0)",
            (CHILD, os.getpid(), socket.gethostname()))
    if version >= 4:  # 0004_gateway_routing
        conn.execute("INSERT INTO gateway_routes(key, session_id, profile, state, turn_started_at, updated_at) "
                     "VALUES (?, ?, 'main', 'resume_pending', 107.0, 108.0)", (ROUTE_KEY, CHILD))
