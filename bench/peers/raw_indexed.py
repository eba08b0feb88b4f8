"""The raw limit with sessiondb's schema: its tables and b-tree indexes (created by opening a
store once; the search index is not in the store file since migration 0005), written by
plain APSW with one INSERT and COMMIT per message."""

from __future__ import annotations

import time

import sessiondb

from .raw_apsw import Adapter as Raw


class Adapter(Raw):
    schema = "SELECT 1"
    insert = ("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
              "VALUES (?, ?, ?, ?, ?, ?)")

    def prepare(self) -> None:
        self.seq = 0

    def new_session(self, name: str) -> str:
        # Made through the library (then closed) so the row satisfies the schema's constraints.
        with sessiondb.open_store(self.path) as store:
            return store.create_session("bench", title=name).id

    def append(self, sid: str, role: str, text: str) -> None:
        self.seq += 1
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.execute(self.insert, (sid, f"u{self.seq}", self.seq, role, text, time.time()))
        self.conn.execute("COMMIT")
