"""store/lineage.py's `land` (its rule, `follow`), the one rule every write follows (S-05, S-46):
the session a write lands on is judged after its lock, and a tip a rotation closed meanwhile
is followed to the next one, a bounded number of times, or the write is refused."""

from __future__ import annotations

import pytest

from sessiondb import Cause, CompressionClosed
from sessiondb.store import lineage

LIVE = lineage.Head(None, None, "compression", 3)
ROTATED = lineage.Head("compression", 1.0, "compression", 3)


class Chain:
    """A conversation whose tip a rotation replaces each time a write locks it, `rotations`
    times: what `land` would meet if every lock waited for a rotation's commit."""

    def __init__(self, rotations: int) -> None:
        self.rotations = rotations
        self.tip = 1
        self.locked: list[str] = []

    def lock(self, session_id: str) -> lineage.Head:
        self.locked.append(session_id)
        if session_id == "s0":
            return ROTATED
        if session_id == f"s{self.tip}" and self.rotations:
            self.rotations -= 1
            self.tip += 1  # committed while this lock waited
            return ROTATED
        return LIVE

    def resolve(self, session_id: str) -> tuple[list[str], lineage.Leaf]:
        path = [f"s{n}" for n in range(self.tip + 1)]
        return path, lineage.Leaf(path[-1], None, None, 0.0)


def test_a_tip_closed_while_its_lock_waited_is_followed_to_the_next_live_one():
    chain = Chain(rotations=3)
    target, head = lineage.follow("s0", chain.lock, chain.resolve)
    assert (target, head) == ("s4", LIVE)
    assert chain.locked == ["s0", "s1", "s2", "s3", "s4"]


def test_a_write_that_keeps_missing_the_tip_is_refused_after_a_bounded_number_of_tries():
    chain = Chain(rotations=lineage.MAX_LANDINGS)
    with pytest.raises(CompressionClosed) as refused:
        lineage.follow("s0", chain.lock, chain.resolve)
    assert refused.value.cause is Cause.COMPRESSION_CLOSED
    assert "Nothing was written" in str(refused.value) and "refresh" in str(refused.value)
    assert len(chain.locked) == lineage.MAX_LANDINGS


def test_a_tip_that_ended_for_another_reason_while_its_lock_waited_refuses_the_write():
    ended = lineage.Leaf("s1", "user_closed", 2.0, 0.0)
    heads = {"s0": ROTATED, "s1": lineage.Head("user_closed", 2.0, "compression", 3)}
    resolved = iter([(["s0", "s1"], lineage.Leaf("s1", None, None, 0.0)), (["s0", "s1"], ended)])
    with pytest.raises(CompressionClosed) as refused:
        lineage.follow("s0", heads.__getitem__, lambda _: next(resolved))
    assert "user_closed" in str(refused.value)


def test_a_session_addressed_directly_takes_the_write_unless_a_rotation_closed_it():
    ended = lineage.Head("user_closed", 2.0, None, 7)
    assert lineage.follow("s", lambda _: ended, pytest.fail) == ("s", ended)
