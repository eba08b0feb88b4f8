"""Durability "full" syncs the WAL after COMMIT, outside the write lock (writer.py).

An append is acknowledged only after a sync of the WAL file its frames were written to
began after its COMMIT; the next transaction is written while that sync runs; a failed
sync refuses the writes it covered and puts the whole WAL into the main file before the
next commit. The sync spied on here is the real one (it still runs); only its failure is
injected, and each test checks that what it injected happened.
"""

from __future__ import annotations

import errno
import os
import threading
import time

import apsw
import pytest

import sessiondb
from sessiondb import StorageError
from sessiondb.store.sqlite import connect, writer


def user(uid, text="hello"):
    return {"uid": uid, "role": "user", "content": text}


def wait_until(condition, what, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def synchronous(store) -> int:
    return store.backend._file.writer.run(lambda c: c.execute("PRAGMA synchronous").fetchone()[0],
                                          in_transaction=False)


def committed_uids(path) -> list[str]:
    """What another connection sees committed (WAL included)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [uid for (uid,) in conn.execute("SELECT uid FROM messages ORDER BY id")]
    finally:
        conn.close()


class Spy:
    """Wraps the writer's fdatasync: records each call, and can hold or fail the next ones."""

    def __init__(self, monkeypatch, path):
        self.path = path
        self.calls: list[dict] = []
        self.hold: list[threading.Event] = []  # the n-th call (once armed) waits for the n-th event
        self.entered: list[threading.Event] = []
        self.fail_next = False
        self.armed = False
        self._real = writer._fdatasync
        monkeypatch.setattr(writer, "_fdatasync", self)

    def __call__(self, fd):
        st, wal = os.fstat(fd), os.stat(f"{self.path}-wal")
        with open(f"{self.path}-wal", "rb") as f:
            call = {"same_file": (st.st_dev, st.st_ino) == (wal.st_dev, wal.st_ino), "wal": f.read()}
        self.calls.append(call)
        if self.armed:
            n = sum(1 for c in self.calls if c.get("armed"))
            call["armed"] = True
            if n < len(self.hold):
                self.entered[n].set()
                assert self.hold[n].wait(10), "a held sync was never released"
            if self.fail_next:
                self.fail_next = False
                raise OSError(errno.EIO, "Input/output error")
        self._real(fd)

    def held(self, count):
        self.hold = [threading.Event() for _ in range(count)]
        self.entered = [threading.Event() for _ in range(count)]
        self.armed = True


@pytest.fixture
def path(tmp_path):
    return tmp_path / "state.db"


def test_an_append_is_acknowledged_after_a_sync_of_the_wal_holding_it(path, monkeypatch):
    spy = Spy(monkeypatch, path)
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli").id
        assert synchronous(store) == 1  # COMMIT itself does not sync (NORMAL)...
        before = len(spy.calls)
        store.append(sid, user("uid-written-before-the-sync"))
        after = spy.calls[before:]
        assert after, "the append was acknowledged without a sync of the WAL"  # ...this does
        assert all(call["same_file"] for call in after)
        assert any(b"uid-written-before-the-sync" in call["wal"] for call in after)


def test_the_next_append_commits_while_the_last_one_syncs_and_waits_for_a_sync_of_its_own(path, monkeypatch):
    spy = Spy(monkeypatch, path)
    store = sessiondb.open_store(path)
    try:
        sid = store.create_session("cli").id
        spy.held(2)
        done = {"a": threading.Event(), "b": threading.Event()}

        def append(uid):
            store.append(sid, user(uid))
            done[uid].set()

        first = threading.Thread(target=append, args=("a",))
        first.start()
        assert spy.entered[0].wait(10), "the first append never synced"
        second = threading.Thread(target=append, args=("b",))
        second.start()
        # Written and committed while the first sync still runs: the lock was let go before it.
        wait_until(lambda: "b" in committed_uids(path), "the second append to commit during the first sync")
        assert not done["a"].is_set() and not done["b"].is_set()
        spy.hold[0].set()
        # The first sync began before the second commit: it acknowledges only the first.
        assert spy.entered[1].wait(10), "the second append was acknowledged by a sync that began before its COMMIT"
        wait_until(done["a"].is_set, "the first append's acknowledgement")
        assert not done["b"].is_set()
        spy.hold[1].set()
        first.join(10)
        second.join(10)
        assert done["b"].is_set()
    finally:
        for event in spy.hold:
            event.set()
        store.close()


def test_a_failed_sync_refuses_its_writes_and_the_next_commit_checkpoints_the_wal_first(path, monkeypatch):
    spy = Spy(monkeypatch, path)
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli").id
        spy.armed, spy.fail_next = True, True
        with pytest.raises(StorageError, match="durable"):
            store.append(sid, user("refused"))
        assert not spy.fail_next  # the failure was injected
        # Committed but never acknowledged: the caller retries, and it is stored once.
        store.append(sid, user("refused"))
        assert [m.uid for m in store.transcript(sid)] == ["refused"]
        # Before that retry's commit, the whole WAL went into the main file (read alone here).
        main = apsw.Connection(f"file:{path}?immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            assert main.execute("SELECT count(*) FROM messages WHERE uid = 'refused'").fetchone()[0] == 1
        finally:
            main.close()


def test_durability_normal_never_syncs_after_commit_and_a_full_handle_turns_it_on(path, monkeypatch):
    spy = Spy(monkeypatch, path)
    with sessiondb.open_store(path, durability="normal") as store:
        sid = store.create_session("cli").id
        store.append(sid, user("n1"))
        assert spy.calls == [] and synchronous(store) == 1
        with sessiondb.open_store(path) as strict:  # the strictest open handle decides
            strict.append(sid, user("f1"))
            assert spy.calls
        count = len(spy.calls)
        store.append(sid, user("n2"))
        assert len(spy.calls) == count


def test_with_a_rollback_journal_commit_syncs_as_sqlite_does(path, monkeypatch):
    spy = Spy(monkeypatch, path)
    monkeypatch.setattr(connect, "filesystem_type", lambda _: "nfs")  # WAL is not used there
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli").id
        store.append(sid, user("j1"))
        assert store.backend._file.journal_mode == "delete"
        assert synchronous(store) == 2 and spy.calls == []
