"""Crash recovery and reset policies (S-33, S-34), with a real process killed by SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from sessiondb import keys, open_store
from sessiondb.gateway import DailyReset, Gateway, IdleReset
from sessiondb.gateway.policies import parse_policy

from .conftest import make_profile, texts

WORKER = Path(__file__).with_name("gateway_worker.py")


def test_a_gateway_killed_mid_turn_resumes_the_turn_and_loses_nothing(home):
    make_profile(home, "work")
    ks = [keys.build("work", "telegram", "dm", "1"), keys.build("main", "slack", "group", "C9", "T1")]
    proc = subprocess.Popen([sys.executable, str(WORKER), str(home), *ks], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    acked = 0
    try:
        for line in proc.stdout:
            acked = int(line.split()[1])
            if acked >= 60:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert acked >= 60

    with Gateway(home) as gw:
        report = gw.recover()
        assert sorted(report.resumed) == sorted(ks)
        assert sorted(gw.resume_pending()) == sorted(ks)
        for key in ks:
            session = gw.session_for(key)  # the same session: the turn resumes there
            owner = keys.parse(key).profile
            with open_store(home=home, profile=owner) as store:
                stored = texts(store, session.id)
            mine = [f"{key} #{n}" for n in range(acked) if ks[n % 2] == key]
            assert stored[:len(mine)] == mine  # every acknowledged message, in order
            assert all(t.startswith(key) for t in stored)  # nothing of the other profile
            gw.turn_started(key)
            gw.turn_finished(key)
        assert gw.resume_pending() == []


def test_a_stale_running_marker_ends_the_session_instead(home):
    key = keys.build("main", "telegram", "dm", "1")
    with Gateway(home) as gw:
        first = gw.turn_started(key)
    with Gateway(home, freshness=60) as gw:
        report = gw.recover(now=time.time() + 3600)
        assert report.ended_stale == [key] and report.resumed == []
        with open_store(home=home) as store:
            assert store.get_session(first.id).end_reason == "stale_turn"
        assert gw.session_for(key).id != first.id


def test_a_running_marker_with_no_valid_time_counts_as_stale(home):
    key = keys.build("main", "telegram", "dm", "2")
    with Gateway(home) as gw:
        gw.turn_started(key)
    with open_store(home=home) as store:
        store.routing.update(key, turn_started_at=None)
    with Gateway(home) as gw:
        assert gw.recover().ended_stale == [key]


def test_a_crash_marker_of_a_profile_without_a_store_waits_for_it(home):
    make_profile(home, "work")
    key = keys.build("work", "telegram", "dm", "3")
    with Gateway(home) as gw:
        gw.turn_started(key)
    (home / "profiles" / "work").rename(home / "profiles" / "work.away")
    with Gateway(home) as gw:
        report = gw.recover()
        assert report.deferred == [key] and report.resumed == []
    (home / "profiles" / "work.away").rename(home / "profiles" / "work")
    with Gateway(home) as gw:
        assert gw.recover().resumed == [key]


def test_an_idle_reset_policy_uses_the_durable_activity_time(home):
    old, fresh = keys.build("main", "telegram", "dm", "old"), keys.build("main", "telegram", "dm", "fresh")
    with Gateway(home) as gw:
        gw.append(old, {"role": "user", "content": "long ago", "timestamp": time.time() - 7200})
        gw.append(fresh, {"role": "user", "content": "just now"})
        old_id = gw.session_for(old).id
    with open_store(home=home) as store:  # activity is the commit time; move it back as if hours passed
        store.backend._write(lambda c: c.execute("UPDATE sessions SET last_activity_at = ? WHERE id = ?",
                                         (time.time() - 7200, old_id)))
    with Gateway(home, reset_policy="idle:3600") as gw:
        report = gw.recover()
        assert report.reset == [old]
        with open_store(home=home) as store:
            assert store.get_session(old_id).end_reason == "idle_reset"
        assert gw.session_for(old).id != old_id


def test_a_session_with_no_activity_time_counts_as_old(home):
    key = keys.build("main", "telegram", "dm", "never")
    with Gateway(home) as gw:
        gw.session_for(key)
    with Gateway(home, reset_policy=IdleReset(3600)) as gw:
        assert gw.recover().reset == [key]


def test_the_daily_policy_expires_activity_before_the_latest_reset_hour():
    now = datetime(2026, 5, 2, 10, 0).timestamp()
    policy = DailyReset(hour=4)
    assert policy.expired(datetime(2026, 5, 2, 3, 59).timestamp(), now)
    assert not policy.expired(datetime(2026, 5, 2, 4, 1).timestamp(), now)
    early = datetime(2026, 5, 2, 2, 0).timestamp()
    assert not policy.expired(datetime(2026, 5, 1, 5, 0).timestamp(), early)
    for bad in (None, float("nan"), "yesterday", now + 86400, -1):
        assert policy.expired(bad, now) and IdleReset(10).expired(bad, now)
    assert parse_policy("none") is None and parse_policy("daily:6") == DailyReset(6)
