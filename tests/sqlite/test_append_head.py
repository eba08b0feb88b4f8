"""A lone writer's append takes its session's head from the append before it, not from a
read, only while nothing can have moved it (sqlite/store.py's LastAppend): each test
moves the head in a way the memory must notice, and the next append must still land one
past the newest message stored."""

from __future__ import annotations

import time

import apsw
import pytest

import sessiondb
from sessiondb.inputs import prepare_messages
from sessiondb.store import commands as cmd
from sessiondb.store.sqlite.store import _HEAD, _fresh


class Reads:
    """Counts the head reads on the writer's connection."""

    def __init__(self, store):
        self.count = 0
        store.backend._file.writer._conn.exec_trace = self._seen

    def _seen(self, cursor, sql, bindings):
        self.count += sql == _HEAD
        return True


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        yield store


def seqs(store, sid):
    return [m.seq for m in store.transcript(sid, include_compacted=True)]


def test_a_lone_writer_reads_its_sessions_head_once(store):
    sid = store.create_session("cli").id
    reads = Reads(store)
    for i in range(5):
        store.append(sid, {"role": "user", "content": f"m{i}"})
    assert reads.count == 1
    other = store.create_session("cli").id
    store.append(other, {"role": "user", "content": "elsewhere"})
    store.append(sid, {"role": "user", "content": "back"})
    assert reads.count == 3  # another session, then this one again after it
    assert seqs(store, sid) == [1, 2, 3, 4, 5, 6]


def test_an_append_by_another_connection_is_seen(store):
    """Another process's commit moves the file's data version past the one commit of our own."""
    sid = store.create_session("cli").id
    store.append(sid, {"role": "user", "content": "ours"})
    other = apsw.Connection(str(store.backend.path))
    other.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                  "VALUES (?, 'theirs', 2, 'user', 'theirs', ?)", (sid, time.time()))
    other.close()
    store.append(sid, {"role": "user", "content": "ours again"})
    assert seqs(store, sid) == [1, 2, 3]


def test_a_write_of_our_own_in_between_is_seen(store):
    """Any other change of this connection's sends the append to its rules: an end between two
    appends, and a row written after the append in its own transaction (as another request of
    its group would)."""
    sid = store.create_session("cli").id
    store.append(sid, {"role": "user", "content": "before"})
    store.end_session(sid, "user_exit")
    store.append(sid, {"role": "user", "content": "after the end"})
    assert store.get_session(sid).ended_at is not None
    shared = store.backend._file
    first = cmd.Append(sid, prepare_messages({"role": "user", "content": "first"}), time.time())

    def append_then_write_another(conn):
        assert _fresh(conn, first, shared)
        conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) "
                     "VALUES (?, 'second', 4, 'user', 'second', ?)", (sid, time.time()))

    shared.writer.run(append_then_write_another)
    store.append(sid, {"role": "user", "content": "third"})
    assert seqs(store, sid) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "in-a-group"])
def test_an_append_rolled_back_leaves_no_head_behind(store, grouped):
    """A common append undone (with its transaction, or with its savepoint in a group whose
    transaction commits), then a commit that changes nothing: the data version moved by one
    commit and no row changed since the undone append, yet its head was never stored."""
    sid = store.create_session("cli").id
    store.append(sid, {"role": "user", "content": "kept"})
    shared = store.backend._file
    writer = shared.writer
    undone = cmd.Append(sid, prepare_messages({"role": "user", "content": "undone"}), time.time())

    def append_then_fail(conn):
        assert _fresh(conn, undone, shared)
        raise RuntimeError("the unit of work fails after its append")

    if grouped:
        with writer._connection_lock:  # held: both requests queue, and are committed as one group
            failing, other = writer.submit(append_then_fail), writer.submit(lambda conn: None)
        writer._wake_writer()
        other.result()
        with pytest.raises(RuntimeError):
            failing.result()
    else:
        with pytest.raises(RuntimeError):
            writer.run(append_then_fail)
        writer.run(lambda conn: None)
    store.append(sid, {"role": "user", "content": "next"})
    assert [m.content for m in store.transcript(sid)] == ["kept", "next"]
    assert seqs(store, sid) == [1, 2]
