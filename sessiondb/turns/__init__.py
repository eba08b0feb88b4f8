"""Turns of an agent's sessions: why each stopped, the correction that was waiting, honest
edit receipts, checkpoints and rollback (S-50..S-53). A user of the store contract: it
imports the leaves, the store's interface and sessiondb's public package, never a backend.
"""

from __future__ import annotations

from ..errors import CheckpointRefused
from ..guidance import explain_turn, register_producer
from .checkpoints import Checkpoint, Checkpoints, Diff, RestoreReport
from .environments import Environment, classify
from .loop import MAX_REDIRECTS, AgentTurn
from .receipts import EditReceipts, Failure, report
from .rollback import rollback_command
from .trees import Limits

__all__ = [
    "AgentTurn", "Checkpoint", "CheckpointRefused", "Checkpoints", "Diff", "EditReceipts", "Environment", "Failure",
    "Limits", "MAX_REDIRECTS", "RestoreReport", "classify", "explain_turn", "register_producer", "report",
    "rollback_command",
]
