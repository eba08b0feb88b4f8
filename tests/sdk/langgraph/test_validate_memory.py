"""Self-tests: run the conformance suite against InMemorySaver."""

from __future__ import annotations

import pytest

from tests.sdk.langgraph.conformance import validate


@pytest.fixture
def memory_checkpointer(checkpointer):
    return checkpointer


@pytest.mark.asyncio
async def test_validate_memory_base(memory_checkpointer):
    """InMemorySaver passes all base capability tests."""
    report = await validate(memory_checkpointer)
    report.print_report()
    assert report.passed_all_base(), f"Base tests failed: {report.to_dict()}"
