"""S-07 on every backend: a compaction lease whose holder is provably dead on this host is
taken over at once, any doubt waits for the TTL. Real holder processes on this host, and
a holder's process identity forged in the lease row (the only backend-specific part)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from sessiondb import CompactionBusy
from sessiondb.store import lease_holders


@pytest.fixture
def sid(store):
    s = store.create_session("cli")
    store.append(s.id, [{"role": "user", "content": f"m{i}", "uid": f"m{i}"} for i in range(4)])
    return s.id


# --- S-07 Lock holders that died -----------------------------------------------------------

HOLDER = textwrap.dedent("""
    import json, sys, time, sessiondb
    location, options = json.loads(sys.argv[1])
    store = sessiondb.open_store(location, **options)
    store.begin_compaction(sys.argv[2], holder="child", ttl=300)
    print("held", flush=True)
    if sys.argv[3] == "linger":
        time.sleep(60)
    import os
    os._exit(0)  # dies without releasing
""")


@pytest.fixture
def holder(store_location):
    """holder(sid, mode): a process of this host taking the session's lease, then exiting
    without releasing it ("exit") or lingering ("linger")."""
    location, options = store_location
    where = json.dumps([str(location), options])
    return lambda sid, mode: subprocess.Popen([sys.executable, "-c", HOLDER, where, sid, mode],
                                              stdout=subprocess.PIPE, text=True)


@pytest.mark.across_processes
def test_s07_a_lease_whose_holder_died_on_this_host_is_reclaimed_at_once(store, sid, holder):
    child = holder(sid, "exit")
    assert child.stdout.readline().strip() == "held"
    child.wait(10)
    lease = store.begin_compaction(sid, ttl=300)  # no waiting for the 300 s TTL
    assert lease.pid == os.getpid()


@pytest.mark.across_processes
def test_s07_a_lease_whose_holder_is_alive_elsewhere_waits_for_its_ttl(store, sid, holder):
    child = holder(sid, "linger")
    try:
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(CompactionBusy):
            store.begin_compaction(sid)
    finally:
        child.kill()
        child.wait(10)
    store.begin_compaction(sid)  # killed: now provably dead


@pytest.mark.across_processes
def test_s07_a_lease_held_by_a_zombie_is_reclaimed(store, sid, holder):
    child = holder(sid, "exit")
    assert child.stdout.readline().strip() == "held"
    deadline = time.time() + 10
    while lease_holders.proc_stat(child.pid) and lease_holders.proc_stat(child.pid)[0] != "Z" and time.time() < deadline:
        time.sleep(0.01)  # exited but not reaped
    assert lease_holders.proc_stat(child.pid)[0] == "Z"
    store.begin_compaction(sid)
    child.wait(10)


def _forge(store, sid, **columns):
    """Overwrite the holder's identity in the session's lease row, below every rule."""
    store.backend.write(lambda rows: rows.update("compaction_leases", {"session_id": sid}, set=columns))


def test_s07_another_thread_of_this_process_is_never_presumed_dead(store, sid):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("lease", store.begin_compaction(sid)))
    t.start()
    t.join()
    with pytest.raises(CompactionBusy):  # the thread ended, but its process (ours) is alive
        store.begin_compaction(sid)


@pytest.mark.parametrize("doubt", ["pid_ns", "host", "boot_id"])
def test_s07_a_holder_in_another_namespace_or_host_waits_for_the_ttl(store, sid, clock, doubt):
    store.begin_compaction(sid, ttl=100)
    _forge(store, sid, pid=2 ** 22 + 12345, **{doubt: "elsewhere"})  # a PID that does not exist here
    with pytest.raises(CompactionBusy):
        store.begin_compaction(sid)
    clock.advance(101)
    store.begin_compaction(sid)


def test_s07_a_reused_pid_is_told_apart_by_its_start_time(store, sid, clock):
    store.begin_compaction(sid, ttl=100)
    parent = os.getppid()  # alive, not us: stands in for a holder's PID reused by another process
    start = lease_holders.start_ticks(parent)
    _forge(store, sid, pid=parent, pid_start=start)
    with pytest.raises(CompactionBusy):  # same PID, same start: the holder is alive
        store.begin_compaction(sid)
    _forge(store, sid, pid=parent, pid_start=start - 1)
    store.begin_compaction(sid)  # same PID, another start time: the holder died, the PID was reused


def test_s07_without_a_recorded_start_time_a_live_pid_is_doubt(store, sid):
    store.begin_compaction(sid, ttl=100)
    _forge(store, sid, pid=os.getppid(), pid_start=None)
    with pytest.raises(CompactionBusy):
        store.begin_compaction(sid)


def test_s07_a_lease_left_by_an_earlier_process_with_our_pid_is_reclaimed(store, sid):
    store.begin_compaction(sid, ttl=100)
    _forge(store, sid, pid=os.getpid(), pid_start=lease_holders.this_process().pid_start - 1)
    store.begin_compaction(sid)  # our PID, but the holder started at another time: it is gone
