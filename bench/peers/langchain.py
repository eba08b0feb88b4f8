"""LangChain SQLChatMessageHistory (langchain-community, over SQLAlchemy). One history object
per conversation, all sharing one engine on one file. Its defaults: SQLite's rollback
journal (DELETE) and synchronous=FULL (every commit fsynced). add_message writes one,
add_messages is its bulk path, .messages loads; it has no search."""

from __future__ import annotations

import sqlite3
import uuid
import warnings
from importlib import metadata

warnings.filterwarnings("ignore")

from langchain_community.chat_message_histories import SQLChatMessageHistory  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

KINDS = {"user": HumanMessage, "assistant": AIMessage}


class Adapter:
    def __init__(self, path: str, mode: str) -> None:
        self.engine = create_engine(f"sqlite:///{path}")
        self.histories: dict[str, SQLChatMessageHistory] = {}

    def _history(self, sid: str) -> SQLChatMessageHistory:
        h = self.histories.get(sid)
        if h is None:
            h = self.histories[sid] = SQLChatMessageHistory(session_id=sid, connection=self.engine)
        return h

    def info(self) -> dict:
        self._history("probe")
        with self.engine.connect() as c:
            sync = c.execute(text("PRAGMA synchronous")).scalar()
            journal = c.execute(text("PRAGMA journal_mode")).scalar()
        return {"version": metadata.version("langchain-community"), "sqlite": sqlite3.sqlite_version,
                "library": f"Python sqlite3 via SQLAlchemy {metadata.version('sqlalchemy')}",
                "durability": f"{journal.upper()}, synchronous={ {1: 'NORMAL', 2: 'FULL'}.get(sync, sync)}"}

    def new_session(self, name: str) -> str:
        sid = uuid.uuid4().hex
        self._history(sid)
        return sid

    def append(self, sid: str, role: str, text_: str) -> None:
        self._history(sid).add_message(KINDS[role](content=text_))

    def bulk(self, sid: str, rows: list[tuple[str, str]]) -> None:
        self._history(sid).add_messages([KINDS[r](content=t) for r, t in rows])

    def load(self, sid: str) -> list:
        return self._history(sid).messages

    def search(self, query: str):
        return None

    def checkpoint(self) -> None:
        pass  # rollback journal: nothing is left outside the database file after a commit

    def close(self) -> None:
        self.engine.dispose()
