"""The retry queue never drops (S-31, S-35, S-39): spool, replay in order, in the owner's store only."""

from __future__ import annotations

import errno
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessiondb import keys, open_store
from sessiondb.errors import Cause
from sessiondb.gateway import Gateway, NotAccepted
from sessiondb.gateway.queue import SPOOL_ANCHOR
from sessiondb.home import profile_dir
from sessiondb.inputs import prepare_messages
from sessiondb.store import spool

from .conftest import all_texts, make_profile


def wait_for(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_a_profile_created_while_the_gateway_runs_gets_its_deferred_messages(home, gateway):
    key = keys.build("late", "telegram", "dm", "1")
    for i in range(5):
        assert gateway.append(key, {"role": "user", "content": f"early {i}"}).deferred
    make_profile(home, "late")  # the miss was not cached: the next attempt finds it
    assert wait_for(lambda: not gateway.status()["profiles"]["late"]["spooled"])
    gateway.append(key, {"role": "user", "content": "after"})
    with open_store(home=home, profile="late") as late, open_store(home=home) as root:
        assert all_texts(late) == [f"early {i}" for i in range(5)] + ["after"]
        assert all_texts(root) == []
        assert root.routing.get(key).profile == "late"


def test_a_locked_store_spools_every_batch_before_append_returns_and_replays_in_order(home, lock_holder):
    make_profile(home, "work")
    key = keys.build("work", "telegram", "group", "-5")
    gw = Gateway(home, patience=0.1, retry_interval=0.3)
    try:
        gw.append(key, {"role": "user", "content": "m0"})  # opens the store and routes the key
        holder = lock_holder(profile_dir(home, "work") / "state.db")
        results = [gw.append(key, {"role": "user", "content": f"m{i}"}) for i in range(1, 36)]
        assert all(r.deferred and os.path.exists(r.spooled_to) for r in results)
        files = sorted(gw.backlog.directory.glob("*.json"))
        assert [str(f) for f in files] == [r.spooled_to for r in results]
        assert all(os.stat(f).st_mode & 0o777 == 0o600 for f in files)
        assert gw.status()["profiles"]["work"]["spooled"] == 35
        holder.release()
        assert wait_for(lambda: "work" not in gw.status()["profiles"] or
                        not gw.status()["profiles"]["work"]["keys_waiting"])
        assert list(gw.backlog.directory.glob("*.json")) == []
    finally:
        gw.close()
    with open_store(home=home, profile="work") as work, open_store(home=home) as root:
        assert all_texts(work) == [f"m{i}" for i in range(36)]
        assert all_texts(root) == []


def test_messages_waiting_at_shutdown_are_replayed_in_order_at_the_next_start(home):
    key = keys.build("late", "telegram", "dm", "2")
    with Gateway(home, retry_interval=60) as gw:
        for i in range(10):
            gw.append(key, {"role": "user", "content": f"n{i}"})
    spooled = sorted((home / "gateway" / "spool").glob("*.json"))
    assert len(spooled) == 10, "each waiting batch is in the spool"
    make_profile(home, "late")
    with Gateway(home) as gw:
        report = gw.recover()
        assert report.spool_files == len(spooled) and report.replayed == 10
    with open_store(home=home, profile="late") as late, open_store(home=home) as root:
        assert all_texts(late) == [f"n{i}" for i in range(10)]
        assert all_texts(root) == []
    assert list((home / "gateway" / "spool").glob("*.json")) == []


def test_a_spool_file_whose_key_does_not_parse_is_left_for_a_person_and_the_rest_replays(home):
    key = keys.build("late", "telegram", "dm", "4")
    with Gateway(home, retry_interval=60) as gw:
        gw.append(key, {"role": "user", "content": "kept"})
    stray = spool.write(home / SPOOL_ANCHOR, "not a key", prepare_messages([{"role": "user", "content": "?"}]),
                        "queued")
    make_profile(home, "late")
    with Gateway(home) as gw:
        report = gw.recover()
        assert (report.spool_files, report.replayed, report.still_waiting) == (1, 1, 0)
    assert stray.exists()
    with open_store(home=home, profile="late") as late:
        assert all_texts(late) == ["kept"]


def test_a_replay_that_fails_keeps_its_files(home):
    key = keys.build("late", "telegram", "dm", "3")
    with Gateway(home, retry_interval=60) as gw:
        gw.append(key, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    before = sorted((home / "gateway" / "spool").glob("*.json"))
    with Gateway(home, retry_interval=60) as gw:
        report = gw.recover()
        assert report.replayed == 0 and report.still_waiting == 1
    assert sorted((home / "gateway" / "spool").glob("*.json")) == before


def test_a_replay_repeated_after_a_crash_stores_nothing_twice(home):
    key = keys.build("late", "telegram", "dm", "4")
    with Gateway(home, retry_interval=60) as gw:
        gw.append(key, [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    (spooled,) = sorted((home / "gateway" / "spool").glob("*.json"))
    copy = spooled.read_bytes()
    make_profile(home, "late")
    with Gateway(home) as gw:
        gw.recover()
    spooled.write_bytes(copy)  # as if the process died between the commit and the unlink
    with Gateway(home) as gw:
        assert gw.recover().replayed == 2
    with open_store(home=home, profile="late") as late:
        assert all_texts(late) == ["a", "b"]


def test_logging_escalates_after_three_consecutive_failures(home, caplog):
    key = keys.build("late", "telegram", "dm", "5")
    with Gateway(home, retry_interval=0) as gw, caplog.at_level(logging.WARNING, "sessiondb.gateway"):
        for _ in range(5):
            gw.append(key, {"role": "user", "content": "x"})
        levels = [r.levelno for r in caplog.records if key in r.getMessage()]
    assert levels[:3] == [logging.WARNING] * 3
    assert logging.ERROR in levels[3:]


def test_a_key_is_parsed_once_per_call_and_a_typed_key_never(home, gateway, monkeypatch):
    parsed = []
    build_key = keys.SessionKey.__post_init__

    def counted(self):
        parsed.append(self)
        build_key(self)

    key = keys.build("late", "telegram", "dm", "1")
    typed = keys.parse(key)
    monkeypatch.setattr(keys.SessionKey, "__post_init__", counted)  # every parse makes one SessionKey
    gateway.append(key, {"role": "user", "content": "m0"})  # no owner yet: queued
    gateway.append(key, {"role": "user", "content": "m1"})  # behind it: queued, retried if due
    assert parsed == [typed, typed]
    parsed.clear()
    gateway.append(typed, {"role": "user", "content": "m2"})
    make_profile(home, "late")
    gateway.flush(typed)
    gateway.turn_started(typed)
    gateway.append(typed, {"role": "user", "content": "m3"})
    gateway.turn_finished(typed)
    assert parsed == []
    with open_store(home=home, profile="late") as late:
        assert all_texts(late) == ["m0", "m1", "m2", "m3"]


SPOOLING_WORKER = Path(__file__).with_name("spooling_worker.py")


def test_every_message_a_gateway_accepted_survives_its_sigkill_and_is_replayed_once_in_order(home, lock_holder):
    """S-39: with its store locked, a gateway process accepts N messages and is killed with
    SIGKILL; the next gateway stores every one of them once, in order, and a message sent to
    it before its replay queues behind them."""
    n = 60
    make_profile(home, "work")
    key = keys.build("work", "telegram", "group", "-7")
    holder = lock_holder(profile_dir(home, "work") / "state.db")
    proc = subprocess.Popen([sys.executable, str(SPOOLING_WORKER), str(home), key, str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    acked = []
    try:
        for line in proc.stdout:
            if line.strip() == "done":
                break
            _, i, path = line.split()
            acked.append(int(i))
            # accepted means on disk, 0600, before append returned
            assert os.stat(path).st_mode & 0o777 == 0o600
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert acked == list(range(n))
    holder.release()

    with Gateway(home) as gw:
        gw.append(key, {"role": "user", "content": "after the restart"})  # behind the dead process's batches
        gw.recover()
        assert gw.backlog.waiting_keys() == []
    with open_store(home=home, profile="work") as work, open_store(home=home) as root:
        assert all_texts(work) == [f"{key} #{i}" for i in range(n)] + ["after the restart"]
        assert all_texts(root) == []
    assert list((home / "gateway" / "spool").glob("*.json")) == []


REPLAY_KILLED = r"""
import os, signal, sys
from sessiondb.gateway import Gateway
from sessiondb.gateway.queue import Backlog

committed = 0
drop = Backlog.drop_file


def drop_then_die(self, key, path):
    # called once a batch committed: the process dies before the K-th file is deleted
    global committed
    committed += 1
    if committed == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    drop(self, key, path)


Backlog.drop_file = drop_then_die
Gateway(sys.argv[1]).recover()
"""


def test_a_replay_killed_between_a_commit_and_its_file_deletion_stores_nothing_twice(home):
    key = keys.build("late", "telegram", "dm", "9")
    with Gateway(home, retry_interval=60) as gw:
        for i in range(10):
            gw.append(key, {"role": "user", "content": f"r{i}"})
    make_profile(home, "late")
    killed = subprocess.run([sys.executable, "-c", REPLAY_KILLED, str(home), "4"],
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert killed.returncode == -signal.SIGKILL
    assert len(list((home / "gateway" / "spool").glob("*.json"))) == 7  # 3 deleted, the 4th committed but kept
    with Gateway(home) as gw:
        assert gw.recover().replayed == 7
    with open_store(home=home, profile="late") as late:
        assert all_texts(late) == [f"r{i}" for i in range(10)]


def test_a_batch_the_spool_cannot_keep_is_refused_not_acknowledged(home, monkeypatch):
    key = keys.build("late", "telegram", "dm", "6")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(spool, "write", full)
    with Gateway(home, retry_interval=60) as gw:
        with pytest.raises(NotAccepted, match="were not accepted.*send them again") as refused:
            gw.append(key, {"role": "user", "content": "lost?"})
        assert refused.value.cause is Cause.DISK_FULL
        assert gw.backlog.waiting_keys() == []


def test_one_process_spools_in_arrival_order_even_when_the_wall_clock_steps_back(home, monkeypatch):
    key = keys.build("late", "telegram", "dm", "8")
    real = time.time_ns
    now = real() + 10**12
    ticks = iter([now, now, now - 10**9])  # a tick repeated, then a step back
    monkeypatch.setattr(spool.time, "time_ns", lambda: next(ticks, None) or real())
    with Gateway(home, retry_interval=60) as gw:
        paths = [gw.append(key, {"role": "user", "content": f"c{i}"}).spooled_to for i in range(3)]
    assert sorted(paths) == paths
    make_profile(home, "late")
    with Gateway(home) as gw:
        gw.recover()
    with open_store(home=home, profile="late") as late:
        assert all_texts(late) == ["c0", "c1", "c2"]
