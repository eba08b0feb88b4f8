"""The public clock hook: every time a store stamps or judges comes from the clock its
handle was opened with, and each handle keeps its own."""

from __future__ import annotations

import pytest

from sessiondb import CompactionBusy, InvalidInput


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


def test_session_times_and_arrival_times_come_from_the_clock(store, clock):
    s = store.create_session("cli")
    assert s.started_at == clock.now
    clock.advance(5)
    [m] = store.append(s.id, user("no timestamp given"))
    [given] = store.append(s.id, user("timestamped", timestamp=1000.0))
    assert (m.timestamp, given.timestamp) == (clock.now, 1000.0)
    assert store.get_session(s.id).last_activity_at == clock.now
    clock.advance(5)
    assert store.end_session(s.id, "user_exit").ended_at == clock.now
    clock.advance(5)
    assert store.branch(s.id, m.id).started_at == clock.now
    assert next(iter(store.export([s.id])))["exported_at"] == clock.now
    assert store.export_session(s.id)["exported_at"] == clock.now


def test_lease_times_come_from_the_clock(store, clock):
    sid = store.create_session("cli").id
    lease = store.begin_compaction(sid, ttl=60)
    assert (lease.acquired_at, lease.expires_at) == (clock.now, clock.now + 60)
    clock.advance(30)
    assert store.refresh_compaction(lease).expires_at == clock.now + 60


def test_a_compaction_is_stamped_by_the_clock(store, clock):
    sid = store.create_session("cli").id
    store.append(sid, user("hello"))
    lease = store.begin_compaction(sid)
    clock.advance(7)
    child = store.commit_compaction(lease, {"role": "system", "content": "gist"}, mode="rotate")
    assert child.started_at == clock.now == store.get_session(sid).ended_at
    assert store.transcript(child.id)[0].timestamp == clock.now


def test_prune_judges_age_by_the_clock(store, clock):
    if not hasattr(store, "prune"):
        pytest.skip("this backend offers no maintenance (prune is an optional capability)")
    sid = store.create_session("cli", session_key="agent:main:cli:dm:1").id
    assert store.prune(older_than=50, dry_run=True).sessions == []
    clock.advance(51)
    assert store.prune(older_than=50, dry_run=True).sessions == [sid]
    assert store.prune(never_active=True, dry_run=True).sessions == []
    clock.advance(31 * 86400)  # never active for over 30 days
    assert store.prune(never_active=True, dry_run=True).sessions == [sid]


def test_two_handles_on_one_store_each_keep_their_own_clock(store, clock, open_backend):
    other = open_backend(clock=lambda: clock.now + 100)  # a hundred seconds ahead
    sid = store.create_session("cli").id
    assert other.create_session("cli").started_at == clock.now + 100
    store.begin_compaction(sid, ttl=60)
    with pytest.raises(CompactionBusy):  # by this handle's clock the lease runs 60 s more
        store.begin_compaction(sid)
    taken = other.begin_compaction(sid)  # by the other's, it expired 40 s ago
    assert taken.acquired_at == clock.now + 100
    assert store.create_session("cli").started_at == clock.now


def test_a_clock_must_be_callable(open_backend):
    with pytest.raises(InvalidInput, match="clock"):
        open_backend(clock=1_900_000_000.0)
