"""Turns of an agent's sessions: why each stopped, the correction that was waiting, honest
edit receipts, checkpoints and rollback (S-50..S-53). A user of the store contract: it
imports the leaves, the store's interface and sessiondb's public package, never a backend.
"""

from __future__ import annotations

from ..guidance import explain_turn, register_producer
from .loop import MAX_REDIRECTS, AgentTurn
from .receipts import EditReceipts, Failure, report

__all__ = ["AgentTurn", "EditReceipts", "Failure", "MAX_REDIRECTS", "explain_turn", "register_producer", "report"]
