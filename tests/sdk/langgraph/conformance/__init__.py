"""langgraph-checkpoint-conformance: conformance test suite for checkpointer implementations."""

from tests.sdk.langgraph.conformance.initializer import checkpointer_test
from tests.sdk.langgraph.conformance.validate import validate

__all__ = [
    "checkpointer_test",
    "validate",
]
