"""Each of langchain-core's chat history tests runs on the SDK's own InMemoryChatMessageHistory
(the control) and on SessiondbChatMessageHistory over SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

import sessiondb
from tests.sdk.langchain.implementation import CONTROL, CURRENT

collect_ignore = ["pydantic_utils.py"]  # the SDK's schema helper (_schema), not a test

_BASE = "builds no history: it tests BaseChatMessageHistory's own methods on a class of its own"
_SCHEMA = "builds no history: it tests RunnableWithMessageHistory's schemas"
#: The SDK's tests that never reach the class under test, so would pass on any
#: (docs/adapters/sdk-suites.md); the fixture fails a sessiondb run that reaches nothing.
NOT_APPLICABLE = {
    "test_chat_history_deprecated[BaseChatMessageHistory]": _BASE,
    "test_add_message_implementation_only": _BASE,
    "test_bulk_message_implementation_only": _BASE,
    "test_async_interface": _BASE,
    "test_get_input_schema_input_dict": _SCHEMA,
    "test_get_output_schema": _SCHEMA,
    "test_get_input_schema_input_messages": _SCHEMA,
}


@pytest.fixture(autouse=True, params=[CONTROL, "sessiondb-sqlite", "sessiondb-postgresql"])
def implementation(request, tmp_path, monkeypatch):
    # Nothing the runnables trace leaves the machine, whatever the environment says.
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.setenv(name, "false")
    # The SDK's own name of the test: its parameter, if it has one, without this fixture's.
    test = request.node.name.replace(f"[{request.param}]", "").replace(f"[{request.param}-", "[")
    if request.param != CONTROL and test in NOT_APPLICABLE:
        pytest.skip(f"not applicable: {NOT_APPLICABLE[test]}")
    if request.param == CONTROL:
        store = None
    elif request.param == "sessiondb-postgresql":
        store = sessiondb.open_store(request.getfixturevalue("pg_server").url(),
                                     schema=request.getfixturevalue("pg_schema"))
    else:
        store = sessiondb.open_store(str(tmp_path / "history.db"))
    reached: list[str] = []
    CURRENT.append((request.param, store, reached))
    yield request.param
    CURRENT.pop()
    if store is not None:
        store.close()
        assert reached, "the test never reached SessiondbChatMessageHistory: list it as not applicable"
