"""Hermes Agent's SessionDB (hermes-agent 0.19.0, module hermes_state), the closest peer.

Its own defaults: WAL and the SQLite default synchronous, which the standard module leaves
at FULL, so every commit is fsynced (mode 'default' is already fsync-per-commit). Appends
go through append_message (one BEGIN IMMEDIATE ... COMMIT per call); its bulk path is
replace_messages (one transaction per call, replacing
the session's rows, so a session is written by one call); loading is get_messages_as_conversation
(what its gateway uses to restore a conversation); search is search_messages (FTS5).
"""

from __future__ import annotations

import sqlite3
import uuid
from importlib import metadata
from pathlib import Path

import hermes_state


class Adapter:
    bulk_replaces = True  # replace_messages deletes the session's rows first

    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.db = hermes_state.SessionDB(db_path=Path(path))

    def info(self) -> dict:
        sync = self.db._conn.execute("PRAGMA synchronous").fetchone()[0]
        journal = self.db._conn.execute("PRAGMA journal_mode").fetchone()[0]
        names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
        return {"version": metadata.version("hermes-agent"), "sqlite": sqlite3.sqlite_version,
                "library": "Python sqlite3", "durability": f"{journal.upper()}, synchronous={names.get(sync, sync)}"}

    def new_session(self, name: str) -> str:
        return self.db.create_session(uuid.uuid4().hex, "cli")

    def append(self, sid: str, role: str, text: str) -> None:
        self.db.append_message(sid, role, text)

    def bulk(self, sid: str, rows: list[tuple[str, str]]) -> None:
        self.db.replace_messages(sid, [{"role": r, "content": t} for r, t in rows])

    def load(self, sid: str) -> list:
        return self.db.get_messages_as_conversation(sid)

    def search(self, query: str) -> list:
        return self.db.search_messages(query)

    def checkpoint(self) -> None:
        pass  # close() runs PRAGMA wal_checkpoint(TRUNCATE) itself

    def close(self) -> None:
        self.db.close()
