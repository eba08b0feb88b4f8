"""Which session continues a conversation: the tip of a compression subtree, on every backend.

A backend walks the compression subtree below a session its own way (a recursive query,
a walk level by level) and hands `choose` whom each member came from and the end of
each leaf (a member without a compression child). Among several leaves (a parent
reopened and rotated again), a live one (not ended) wins, then one ended for another
reason, then one closed by compression (a dead end); then the newest by start, then the
larger id. A write addressed to a rotated session lands on the tip only while the tip is
live (S-05 fails closed): `closed` is the refusal otherwise.

`land` is that rule for a write, on every backend: the session a write lands on is judged
after its row is locked, since a rotation may close the tip between choosing it and
locking it, and a row written there would be acknowledged into a session nobody resumes
(S-46). A backend gives it two primitives: lock a session's row for the write's
transaction and read its head after the lock, and resolve the tip as `choose` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, NamedTuple

from ..errors import CompressionClosed
from ..model import COMPRESSION

#: Tips a write follows at most: each new one means a rotation committed while the write
#: was on its way, so a write that keeps missing is refused rather than chasing forever.
MAX_LANDINGS = 16


class Head(NamedTuple):
    """A session's row as its lock read it: how it ended, how it continues its parent,
    and the seq of its newest message (0 without one)."""

    end_reason: str | None
    ended_at: float | None
    parent_relation: str | None
    last_seq: int


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


def land(session_id: str, lock: Callable[[str], Head],
         resolve: Callable[[str], tuple[list[str], Leaf]]) -> tuple[str, Head]:
    """The session a write addressed to `session_id` lands on, locked, and its head.

    The addressed session takes the write unless a compaction rotated it; then its live tip
    does, judged again once locked: a tip that ended meanwhile is left for the one that
    continues it now, or the write is refused (`closed`) when none is live.
    """
    target = session_id
    for _ in range(MAX_LANDINGS):
        head = lock(target)
        if (head.end_reason != COMPRESSION) if target == session_id else (head.ended_at is None):
            return target, head
        path, tip = resolve(session_id)
        if not tip.live:
            raise closed(session_id, tip)
        target = path[-1]
    raise CompressionClosed(
        f"session {session_id} was rotated into a new session {MAX_LANDINGS} times while this write "
        "followed it, so it landed nowhere. Nothing was written: refresh the session (reload it) and "
        "write there")
