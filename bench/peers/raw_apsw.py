"""The raw limit: plain APSW with sessiondb's pragmas, one INSERT and one COMMIT per message
into a table with no index. Mode 'full' or 'normal' picks synchronous (as sessiondb's
durability does). See raw_indexed.py for the same with sessiondb's own schema."""

from __future__ import annotations

import time

import apsw


class Adapter:
    schema = "CREATE TABLE IF NOT EXISTS m(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, ts REAL)"
    insert = "INSERT INTO m(session_id, role, content, ts) VALUES (?, ?, ?, ?)"

    def __init__(self, path: str, mode: str) -> None:
        self.sync = "NORMAL" if mode == "normal" else "FULL"
        self.path = path
        self.prepare()
        self.conn = apsw.Connection(path)
        # One statement per execute: APSW runs the statements after one that returns a row
        # (journal_mode does) only as the cursor is read.
        self.conn.execute("PRAGMA journal_mode=WAL").fetchall()
        self.conn.execute(f"PRAGMA synchronous={self.sync}")
        self.conn.execute(self.schema)
        self.sessions = 0

    def prepare(self) -> None:
        pass

    def info(self) -> dict:
        journal = self.conn.execute("PRAGMA journal_mode").fetchall()[0][0]
        sync = {1: "NORMAL", 2: "FULL"}.get(self.conn.execute("PRAGMA synchronous").fetchall()[0][0])
        return {"version": "-", "sqlite": apsw.sqlite_lib_version(), "library": f"APSW {apsw.apsw_version()}",
                "durability": f"{journal.upper()}, synchronous={sync}"}

    def new_session(self, name: str) -> str:
        self.sessions += 1
        return f"s{self.sessions}"

    def append(self, sid: str, role: str, text: str) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(self.insert, (sid, role, text, time.time()))
        self.conn.execute("COMMIT")

    def bulk(self, sid, rows):
        raise NotImplementedError

    def load(self, sid):
        raise NotImplementedError

    def search(self, query):
        return None

    def checkpoint(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self.conn.close()
