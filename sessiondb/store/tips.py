"""Which session continues a conversation: the tip of a compression subtree, on every backend.

A backend walks the compression subtree below a session its own way (a recursive query,
a walk level by level) and hands `choose` whom each member came from and the end of
each leaf (a member without a compression child). Among several leaves (a parent
reopened and rotated again), a live one (not ended) wins, then one ended for another
reason, then one closed by compression (a dead end); then the newest by start, then the
larger id. A write addressed to a rotated session lands on the tip only while the tip is
live (S-05 fails closed): `closed` is the refusal otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..errors import CompressionClosed
from ..model import COMPRESSION


@dataclass(frozen=True)
class Leaf:
    """A member of the subtree with no compression child, and how it ended."""

    id: str
    end_reason: str | None
    ended_at: float | None
    started_at: float

    @property
    def live(self) -> bool:
        return self.ended_at is None


def _rank(leaf: Leaf) -> tuple[int, float, str]:
    standing = 0 if leaf.live else (2 if leaf.end_reason == COMPRESSION else 1)
    return -standing, leaf.started_at, leaf.id


def choose(came_from: Mapping[str, str | None], leaves: Iterable[Leaf]) -> tuple[list[str], Leaf]:
    """The path from the subtree's root (the member that came from None) down to the tip,
    and the tip's leaf."""
    tip = max(leaves, key=_rank)
    path = [tip.id]
    while came_from[path[-1]] is not None:
        path.append(came_from[path[-1]])
    path.reverse()
    return path, tip


def closed(session_id: str, tip: Leaf) -> CompressionClosed:
    """The refusal of a write to rotated `session_id` whose tip is not live."""
    ended = ("no live session continues it" if tip.end_reason == COMPRESSION else
             f"the session continuing it, {tip.id}, has since ended (reason {tip.end_reason!r})")
    return CompressionClosed(
        f"session {session_id} was closed when a compaction rotated it into a new session, and "
        f"{ended}. Nothing was written: refresh the session (reload it, or start a new one) and "
        "write there")
