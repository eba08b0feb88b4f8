"""The fixture swapped into LangGraph's checkpoint conformance suite: the checkpointer a
run tests, the SDK's own InMemorySaver (the control) or SessiondbSaver over a store."""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from sessiondb import Store
from sessiondb.adapters.langgraph import SessiondbSaver
from tests.sdk.langgraph.conformance import checkpointer_test
from tests.sdk.langgraph.conformance.initializer import RegisteredCheckpointer

IMPLEMENTATIONS = ("InMemorySaver", "sessiondb-sqlite", "sessiondb-postgresql")


def registered(name: str, store: Store | None) -> RegisteredCheckpointer:
    """What the suite's `@checkpointer_test` registers: a fresh saver per capability suite,
    InMemorySaver without a store, SessiondbSaver over `store` (the test's own, empty)."""

    @checkpointer_test(name=name)
    async def checkpointer():
        yield InMemorySaver() if store is None else SessiondbSaver(store=store)

    return checkpointer
