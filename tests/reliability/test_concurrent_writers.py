"""Many writers, one file (S-10): threads of this process and other processes append to the
same sessions at once. Every acknowledged message is stored exactly once, each writer's
messages keep their order, and a writer killed mid-stream loses nothing it was promised."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections import Counter, defaultdict
from pathlib import Path

import sessiondb

WORKER = Path(__file__).with_name("append_worker.py")
THREADS = 8
PROCESSES = 3
PER_WRITER = 300


def start_worker(path, name, count, session_ids, *, gate=False):
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(path), name, str(count), ",".join(session_ids)]
        + (["--gate"] if gate else []),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def acked_uids(stdout: str) -> list[str]:
    return [line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("ack ")]


def check_store(path, session_ids, acked: dict[str, list[str]]):
    """Every acknowledged uid stored once; within each writer, stored in the order written."""
    with sessiondb.open_store(path) as store:
        rows = [m for sid in session_ids for m in store.transcript(sid)]
        for sid in session_ids:
            s = store.get_session(sid)
            assert s.message_count == len(store.transcript(sid))
    counts = Counter(m.uid for m in rows)
    assert [uid for uid, n in counts.items() if n > 1] == [], "a message was stored twice"
    for writer, uids in acked.items():
        missing = [u for u in uids if u not in counts]
        assert missing == [], f"{writer}: acknowledged but not stored: {missing[:5]}"
    by_writer = defaultdict(list)
    for m in sorted(rows, key=lambda m: m.id):
        writer, i = m.uid.rsplit("-", 1)
        by_writer[writer].append(int(i))
        assert m.content == m.uid
    for writer, order in by_writer.items():
        assert order == sorted(order), f"{writer}'s messages are out of order"
        assert order == list(range(len(order))), f"{writer} has a gap"
    return rows


def test_threads_and_processes_appending_to_shared_sessions_store_every_ack_once(tmp_path):
    path = tmp_path / "shared.db"
    with sessiondb.open_store(path) as store:
        session_ids = [store.create_session("cli", session_id=f"shared-{n}").id for n in range(3)]

    procs = {f"p{n}": start_worker(path, f"p{n}", PER_WRITER, session_ids, gate=True) for n in range(PROCESSES)}
    acked: dict[str, list[str]] = {}
    errors: list[BaseException] = []
    try:
        for proc in procs.values():
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        with sessiondb.open_store(path, durability="full", patience=60) as store:
            go = threading.Barrier(THREADS + 1)

            def thread_writer(name):
                done = acked.setdefault(name, [])
                try:
                    go.wait()
                    for i in range(PER_WRITER):
                        uid = f"{name}-{i}"
                        store.append(session_ids[i % len(session_ids)], {"uid": uid, "role": "user", "content": uid})
                        done.append(uid)
                except BaseException as exc:  # pragma: no cover - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=thread_writer, args=(f"t{n}",)) for n in range(THREADS)]
            for t in threads:
                t.start()
            for proc in procs.values():  # every writer starts at once
                proc.stdin.write("go\n")
                proc.stdin.flush()
            go.wait()
            for t in threads:
                t.join(60)
                assert not t.is_alive(), "a writer thread hung"
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, f"{name} failed:\n{err}"
            assert out.rstrip().endswith("done"), out[-200:]
            acked[name] = acked_uids(out)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert errors == []

    assert all(len(uids) == PER_WRITER for uids in acked.values())
    rows = check_store(path, session_ids, acked)
    assert len(rows) == (THREADS + PROCESSES) * PER_WRITER
    # The writers really overlapped: the commit order switches between writers far more
    # often than once per writer. (A process tends to commit its whole stream in one run:
    # whoever holds the lock wins it back before the waiters' back-off ends.)
    order = [m.uid.rsplit("-", 1)[0] for m in sorted(rows, key=lambda m: m.id)]
    switches = sum(a != b for a, b in zip(order, order[1:]))
    assert switches > 10 * (THREADS + PROCESSES)


def test_a_process_killed_mid_stream_loses_nothing_it_was_promised(tmp_path):
    path = tmp_path / "killed.db"
    with sessiondb.open_store(path) as store:
        session_ids = [store.create_session("cli").id for _ in range(2)]
    survivor = start_worker(path, "survivor", 200, session_ids)
    victim = start_worker(path, "victim", 100_000, session_ids)
    try:
        seen = 0
        while seen < 150:  # let it get well into its stream, alongside the survivor
            line = victim.stdout.readline()
            assert line, victim.stderr.read()
            seen += line.startswith("ack ")
        os.kill(victim.pid, signal.SIGKILL)
        # Read the rest through the same buffered reader: readline() may have read acks
        # ahead, which communicate() (reading the raw pipe) would never see.
        rest = victim.stdout.read()
        victim.wait(timeout=30)
        out, err = survivor.communicate(timeout=60)
        assert survivor.returncode == 0, err
    finally:
        for proc in (survivor, victim):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert victim.returncode == -signal.SIGKILL
    victim_acked = [f"victim-{i}" for i in range(seen)] + acked_uids(rest)
    rows = check_store(path, session_ids, {"victim": victim_acked, "survivor": acked_uids(out)})
    stored_victim = [m for m in rows if m.uid.startswith("victim-")]
    # At most the one append in flight when it died may be stored without its ack.
    assert len(victim_acked) <= len(stored_victim) <= len(victim_acked) + 1
    # The store is healthy for the next writer.
    with sessiondb.open_store(path) as store:
        store.append(session_ids[0], {"uid": "after", "role": "user", "content": "after"})
        assert store.transcript(session_ids[0])[-1].uid == "after"
