"""Every test of LangGraph's conformance suite, one by one, on each checkpointer: what the
suite's `validate()` runs per capability, with a result per test.

A capability the checkpointer does not offer (its async method is the base class's) is
skipped, as `validate()` skips it, on the SDK's own saver; sessiondb's saver offers every
one, so there it fails instead: a missing method cannot pass unseen."""

from __future__ import annotations

import asyncio

import pytest

from tests.sdk.langgraph.conformance.capabilities import Capability, DetectedCapabilities
from tests.sdk.langgraph.conformance.spec import (
    test_copy_thread, test_delete_for_runs, test_delete_thread, test_delta_channel_history, test_get_tuple,
    test_list, test_prune, test_put, test_put_writes,
)

SUITES = {
    Capability.PUT: test_put.ALL_PUT_TESTS,
    Capability.PUT_WRITES: test_put_writes.ALL_PUT_WRITES_TESTS,
    Capability.GET_TUPLE: test_get_tuple.ALL_GET_TUPLE_TESTS,
    Capability.LIST: test_list.ALL_LIST_TESTS,
    Capability.DELETE_THREAD: test_delete_thread.ALL_DELETE_THREAD_TESTS,
    Capability.DELETE_FOR_RUNS: test_delete_for_runs.ALL_DELETE_FOR_RUNS_TESTS,
    Capability.COPY_THREAD: test_copy_thread.ALL_COPY_THREAD_TESTS,
    Capability.PRUNE: test_prune.ALL_PRUNE_TESTS,
    Capability.DELTA_CHANNEL_HISTORY: test_delta_channel_history.ALL_DELTA_CHANNEL_HISTORY_TESTS,
}


def test_every_capability_of_the_suite_is_run():
    assert set(SUITES) == set(Capability)


@pytest.mark.parametrize("capability, spec", [(cap, spec) for cap, specs in SUITES.items() for spec in specs],
                         ids=lambda value: getattr(value, "__name__", getattr(value, "value", None)))
def test_conformance(checkpointer, capability, spec):
    async def run():
        async with checkpointer.create() as saver:
            if capability not in DetectedCapabilities.from_instance(saver).detected:
                if checkpointer.name.startswith("sessiondb"):
                    pytest.fail(f"SessiondbSaver does not offer {capability.value}")
                pytest.skip(f"{type(saver).__name__} does not offer {capability.value}")
            await spec(saver)

    asyncio.run(run())
