"""The retention sweep's one race, staged: a conversation written to between the plan and
its transaction is left for the next run, never removed with the new message in it."""

from __future__ import annotations

import sessiondb
from sessiondb.store import retention
from sessiondb.testing import FakeClock

DAY = 86400.0


def test_a_conversation_written_to_after_the_plan_is_left_for_the_next_run(monkeypatch):
    clock = FakeClock()
    store = sessiondb.open_store("memory://retention-race", clock=clock)
    old = store.create_session("cli")
    store.append(old.id, {"role": "user", "content": "long ago"})
    clock.advance(100 * DAY)
    recent = store.create_session("cli")
    store.append(recent.id, {"role": "user", "content": "today"})
    store.set_policy(inactive_after=90 * DAY)
    backend = store._open()
    write = backend.write
    staged = []

    def written_to_first(work):
        if getattr(work, "func", None) is retention._remove and not staged:
            staged.append(store.append(old.id, {"role": "user", "content": "just now"}))
        return write(work)

    monkeypatch.setattr(backend, "write", written_to_first)
    report = store.apply_policy(dry_run=False)
    assert staged and report.removed == []
    assert [m.content for m in store.transcript(old.id)] == ["long ago", "just now"]
    assert store.apply_policy().removed == []  # and the next run sees it active
