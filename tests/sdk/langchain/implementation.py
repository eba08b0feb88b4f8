"""The fixture swapped into langchain-core's own chat history tests: `InMemoryChatMessageHistory(...)`
builds the implementation this run is testing, the SDK's own class (the control) or
SessiondbChatMessageHistory on a session of its own in this test's store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import InMemoryChatMessageHistory as SdkInMemoryChatMessageHistory
from langchain_core.messages import BaseMessage

from sessiondb.adapters.langchain import SessiondbChatMessageHistory
from sessiondb.store.contract import Store

CONTROL = "InMemoryChatMessageHistory"
#: (name, store, what the test reached of the implementation) of the running test; a plain
#: global, as the runnables call in from worker threads and event loops.
CURRENT: list[tuple[str, Store | None, list[str]]] = []


class _Documented(type(SdkInMemoryChatMessageHistory)):
    """The SDK's tests read the class's docstring: it is the one of the class under test."""

    @property
    def __doc__(cls) -> str | None:  # type: ignore[override]
        if not CURRENT or CURRENT[-1][0] == CONTROL:
            return SdkInMemoryChatMessageHistory.__doc__
        CURRENT[-1][2].append("docstring")
        return SessiondbChatMessageHistory.__doc__


class InMemoryChatMessageHistory(SdkInMemoryChatMessageHistory, metaclass=_Documented):
    """The SDK's class itself for the control; a SessiondbChatMessageHistory else."""

    def __new__(cls, *, messages: Sequence[BaseMessage] = (), **fields: Any) -> Any:
        name, store, reached = CURRENT[-1]
        if name == CONTROL:
            return super().__new__(cls)
        reached.append("history")
        history = _ComparedByMessages(f"history-{len(reached)}", store=store)
        history.add_messages(list(messages))
        return history


class _ComparedByMessages(SessiondbChatMessageHistory):
    """Equal to another such history holding equal messages, as the SDK's class (a pydantic
    model whose one field is its messages) compares: the tests compare histories whole."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]  # equal by value, as the SDK's unhashable model
