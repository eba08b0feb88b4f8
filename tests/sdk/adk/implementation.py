"""The fixtures swapped into ADK's own tests: the service a test builds is the one this run
is testing, the SDK's own (the control) or sessiondb's adapter over SQLite or PostgreSQL.

ADK's session tests build their service with `get_session_service` (directly, or through
their `session_service` fixture); its memory tests construct `InMemoryMemoryService()`.
conftest.py puts `session_service`, `get_session_service` and `InMemoryMemoryService`
below into those modules in place of theirs, nothing else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.adk.memory.in_memory_memory_service import InMemoryMemoryService as SdkInMemoryMemoryService

from sessiondb.adapters.adk import SessiondbMemoryService, SessiondbSessionService

#: The SDK's session services the suite's own fixture builds, by the name of this run.
SESSION_CONTROLS = {"InMemorySessionService": "IN_MEMORY", "DatabaseSessionService": "DATABASE",
                    "SqliteSessionService": "SQLITE"}
SESSIONDB = ("sessiondb-sqlite", "sessiondb-postgresql")


class Run:
    """The running test's implementation: its name, store options, a directory for stores,
    and the services it opened (closed in the test's own event loop)."""

    def __init__(self, name: str, options: dict[str, Any], directory: Path) -> None:
        self.name, self.options, self.directory, self.opened = name, options, directory, []

    def sessiondb(self, service_class: type) -> Any:
        options = dict(self.options)
        location = options.pop("url", None) or str(self.directory / "adk.sessiondb")
        service = service_class(location, **options)
        self.opened.append(service)
        return service


#: The running test's Run; a plain global, as ADK's thread test calls in from other threads.
CURRENT: list[Run] = []


def swapped_get_session_service(original):
    """ADK's `get_session_service(service_type, tmp_path)`: the SDK's service of that type
    for a control, sessiondb's for a sessiondb run."""

    def get_session_service(service_type=None, tmp_path=None):
        run = CURRENT[-1]
        if run.name in SESSIONDB:
            return run.sessiondb(SessiondbSessionService)
        service = original(service_type, tmp_path) if service_type is not None else original(tmp_path=tmp_path)
        run.opened.append(service)
        return service

    return get_session_service


def swapped_session_service(module):
    """ADK's `session_service` fixture, over this run's implementation instead of its own params."""

    @pytest.fixture
    def session_service(tmp_path):
        run = CURRENT[-1]
        kind = module.SessionServiceType[SESSION_CONTROLS[run.name]] if run.name in SESSION_CONTROLS else None
        return module.get_session_service(kind, tmp_path)

    return session_service


class InMemoryMemoryService(SdkInMemoryMemoryService):
    """The SDK's class itself for the control; SessiondbMemoryService else."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        run = CURRENT[-1]
        if run.name in SESSIONDB:
            return run.sessiondb(SessiondbMemoryService)
        return super().__new__(cls)
