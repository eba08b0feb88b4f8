"""A real compaction with a slow summary while three other processes append to the session.

Nothing is lost, nothing is duplicated, and no append waits for the compaction: every
writer has appends committed after the lease was taken and before the summary was, and
after the compaction was published. The writers append when told, so each of those
moments holds appends of every writer however the machine schedules them (no clock is
read), and they keep appending while the summary is published. Marker messages appended
to another session at those moments order them: an append's id is its place in the
store's commit order (S-02, S-03, S-05). How long an append takes meanwhile is measured
by `make bench-lineage`.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import textwrap
import threading

import pytest

import sessiondb

WRITERS = 3
BURST = 5  # appends each writer makes at each moment

APPENDER = textwrap.dedent("""
    import json, sys
    import sessiondb

    path, session_id, name = sys.argv[1], sys.argv[2], sys.argv[3]
    i = 0
    with sessiondb.open_store(path) as store:
        print("ready", flush=True)
        for line in sys.stdin:  # a number: append that many, then report them
            acks = []
            for _ in range(int(line)):
                [row] = store.append(session_id, {"uid": f"{name}-{i}", "role": "user", "content": f"{name} says {i}"})
                acks.append({"uid": row.uid, "id": row.id, "session": row.session_id})
                i += 1
            print(json.dumps(acks), flush=True)
""")


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_three_processes_appending_through_a_slow_compaction_lose_and_duplicate_nothing(tmp_path, mode):
    path = tmp_path / "shared.db"
    with sessiondb.open_store(path) as store:
        sid = store.create_session("gateway", title="busy chat").id
        clock = store.create_session("cli", title="markers").id

        def mark(name: str) -> int:
            [row] = store.append(clock, {"uid": name, "role": "system", "content": name})
            return row.id

        store.append(sid, [{"uid": f"old-{i}", "role": "user", "content": f"old {i}"} for i in range(200)])

        children = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), sid, f"p{n}"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                    for n in range(WRITERS)]
        results: list[list[dict]] = [[] for _ in children]
        lines = [queue.Queue() for _ in children]
        for child, heard in zip(children, lines):
            threading.Thread(target=lambda c=child, q=heard: [q.put(x) for x in c.stdout], daemon=True).start()

        def tell(count: int) -> None:
            for child in children:
                child.stdin.write(f"{count}\n")
                child.stdin.flush()

        def hear() -> None:
            for n, heard in enumerate(lines):
                try:
                    line = heard.get(timeout=120)  # a bound on a hang (an append that waited), not a latency
                except queue.Empty:
                    raise AssertionError(f"writer p{n} never finished its appends") from None
                results[n] += json.loads(line)

        try:
            for heard in lines:
                assert heard.get(timeout=120).strip() == "ready"
            tell(BURST)  # before the lease
            hear()
            lease = store.begin_compaction(sid, holder="slow summary")
            leased = mark("leased")
            tell(BURST)  # while the model writes its summary
            hear()
            committing = mark("committing")
            tell(4 * BURST)  # still appending as the summary is published
            live = store.commit_compaction(lease, {"uid": "gist", "role": "system", "content": "the gist"}, mode=mode)
            committed = mark("committed")
            hear()
            tell(BURST)  # after the compaction
            hear()
            for child in children:
                child.stdin.close()
                assert child.wait(60) == 0
        finally:
            for child in children:
                if child.poll() is None:
                    child.kill()
                    child.wait()

        rows = [m for s in store.lineage(sid) for m in store.transcript(s.id, include_compacted=True)]
        uids = [m.uid for m in rows]
        assert len(uids) == len(set(uids))  # nothing duplicated
        acked = [a for acks in results for a in acks]
        assert {a["uid"] for a in acked} <= set(uids)  # nothing lost
        for n, acks in enumerate(results):  # each writer's messages in the order it wrote them
            assert [u for u in uids if u.startswith(f"p{n}-")] == [a["uid"] for a in acks]
        # Rows stored up to the watermark were archived; every later one follows the summary.
        before = {a["uid"] for a in acked if a["session"] == sid and a["id"] <= lease.watermark}
        state = {m.uid: m.state for m in rows}
        assert {u for u, st in state.items() if st == "compacted"} == before | {f"old-{i}" for i in range(200)}
        assert [m.uid for m in store.transcript(live.id)] == ["gist"] + [
            m.uid for m in rows if m.uid not in before and m.uid != "gist" and not m.uid.startswith("old-")]
        writers = {f"p{n}" for n in range(WRITERS)}
        after = [a for a in acked if a["id"] > committed]
        assert {a["uid"].split("-")[0] for a in after} == writers
        if mode == "rotate":
            assert {a["session"] for a in after} == {live.id}  # writes after the rotation followed it
        during = [a for a in acked if leased < a["id"] < committing]
        assert {a["uid"].split("-")[0] for a in during} == writers  # none waited
