"""The fixture swapped into the SDK's own session tests: `SQLiteSession(...)` builds the
implementation this run is testing, the SDK's own class (the control) or SessiondbSession."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import SQLiteSession as SdkSQLiteSession

from sessiondb.adapters.openai_agents import SessiondbSession

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
