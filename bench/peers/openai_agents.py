"""OpenAI Agents SDK SQLiteSession (openai-agents). One SQLiteSession per conversation over
one file; its methods are coroutines run on one event loop per thread. Its defaults: WAL
and the standard module's synchronous=FULL (every commit fsynced). add_items is its only
write path (a list is its bulk path); get_items loads; it has no search."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import uuid
from importlib import metadata

from agents.memory import SQLiteSession


class Adapter:
    def __init__(self, path: str, mode: str) -> None:
        self.path = path
        self.sessions: dict[str, SQLiteSession] = {}
        self.local = threading.local()

    def _run(self, coro):
        loop = getattr(self.local, "loop", None)
        if loop is None:
            loop = self.local.loop = asyncio.new_event_loop()
        return loop.run_until_complete(coro)

    def _session(self, sid: str) -> SQLiteSession:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = SQLiteSession(sid, self.path)
        return s

    def info(self) -> dict:
        conn = self._session("probe")._get_connection()
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return {"version": metadata.version("openai-agents"), "sqlite": sqlite3.sqlite_version,
                "library": "Python sqlite3",
                "durability": f"{journal.upper()}, synchronous={ {1: 'NORMAL', 2: 'FULL'}.get(sync, sync)}"}

    def new_session(self, name: str) -> str:
        sid = uuid.uuid4().hex
        self._session(sid)
        return sid

    def append(self, sid: str, role: str, text: str) -> None:
        self._run(self._session(sid).add_items([{"role": role, "content": text}]))

    def bulk(self, sid: str, rows: list[tuple[str, str]]) -> None:
        self._run(self._session(sid).add_items([{"role": r, "content": t} for r, t in rows]))

    def load(self, sid: str) -> list:
        return self._run(self._session(sid).get_items())

    def search(self, query: str):
        return None

    def checkpoint(self) -> None:
        conn = sqlite3.connect(self.path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()

    def close(self) -> None:
        for s in self.sessions.values():
            s.close()
