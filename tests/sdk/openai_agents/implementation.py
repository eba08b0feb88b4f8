"""The fixture swapped into the SDK's own session tests: `SQLiteSession(...)` and
`SimpleListSession(...)` build the implementation this run is testing, the SDK's own class
(the control) or SessiondbSession."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from agents import SQLiteSession as SdkSQLiteSession
from agents.memory.session import Session

from sessiondb.adapters.openai_agents import SessiondbSession
from tests.sdk.openai_agents.simple_session import SimpleListSession as SdkSimpleListSession

#: (name, store options, directory for stores, sessions opened) of the running test; a plain
#: global, as the SDK's runner calls in from other threads and event loops.
CURRENT: list[tuple[str, dict[str, Any], Path, list[Any]]] = []


class SQLiteSession(SdkSQLiteSession):
    """The SDK's class itself for the control (its class attributes too); SessiondbSession else."""

    def __new__(cls, session_id: str, db_path: Any = ":memory:", session_settings: Any = None) -> Any:
        name, options, directory, opened = CURRENT[-1]
        if name == "SQLiteSession":
            return super().__new__(cls)
        location = options.get("url")
        if location is None:
            # Its own file beside the SDK's path: sessiondb never shares a file with the sqlite3 module.
            location = str(directory / "memory.sessiondb") if str(db_path) == ":memory:" else f"{db_path}.sessiondb"
        session = SessiondbSession(session_id, location, session_settings=session_settings,
                                   **{k: v for k, v in options.items() if k != "url"})
        opened.append(session)
        return session


class SimpleListSession(Session):
    """The SDK's own list session (its tests' helper, vendored as simple_session.py) for the
    control, SessiondbSession else, holding `history` from the start. A session of its own
    that hands each call to the one it holds, so the SDK's tests can subclass it as they
    subclass the list session."""

    def __init__(self, session_id: str = "test", history: list[Any] | None = None) -> None:
        name, options, directory, opened = CURRENT[-1]
        self.session_id, self.session_settings = session_id, None
        if name == "SQLiteSession":
            self._held: Any = SdkSimpleListSession(session_id, history)
            return
        location = options.get("url") or str(directory / f"{session_id}.sessiondb")
        self._held = SessiondbSession(session_id, location, **{k: v for k, v in options.items() if k != "url"})
        opened.append(self._held)
        if history:
            # Stored before the test runs, on a loop of its own: the constructor may be called inside one.
            worker = threading.Thread(target=asyncio.run, args=(self._held.add_items(list(history)),))
            worker.start()
            worker.join()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._held, name)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return await self._held.get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self._held.add_items(items)

    async def pop_item(self) -> Any:
        return await self._held.pop_item()

    async def clear_session(self) -> None:
        await self._held.clear_session()
