"""A real compaction with a slow summary while three other processes append to the session.

Nothing is lost, nothing is duplicated, and no append waits for the compaction: every
writer has appends committed after the lease was taken and before the summary was. Marker
messages appended to another session at those moments order them without reading a
clock: an append's id is its place in the store's commit order (S-02, S-03, S-05). How long an append takes meanwhile is measured by `make bench-lineage`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

import sessiondb

SUMMARY_SECONDS = 2.0
WRITERS = 3

APPENDER = textwrap.dedent("""
    import json, sys, time
    import sessiondb

    path, session_id, name, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    acks = []
    with sessiondb.open_store(path) as store:
        deadline = None
        i = 0
        while deadline is None or time.time() < deadline:
            [row] = store.append(session_id, {"uid": f"{name}-{i}", "role": "user", "content": f"{name} says {i}"})
            acks.append({"uid": row.uid, "id": row.id, "session": row.session_id})
            if deadline is None:
                deadline = time.time() + seconds
                print("ready", flush=True)
            i += 1
            time.sleep(0.005)
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

        children = [
            subprocess.Popen([sys.executable, "-c", APPENDER, str(path), sid, f"p{n}", str(SUMMARY_SECONDS + 2)],
                             stdout=subprocess.PIPE, text=True)
            for n in range(WRITERS)
        ]
        try:
            for child in children:
                assert child.stdout.readline().strip() == "ready"
            time.sleep(0.3)
            lease = store.begin_compaction(sid, holder="slow summary")
            leased = mark("leased")
            time.sleep(SUMMARY_SECONDS)  # the model writes its summary
            committing = mark("committing")
            live = store.commit_compaction(lease, {"uid": "gist", "role": "system", "content": "the gist"}, mode=mode)
            committed = mark("committed")
            results = []
            for child in children:
                out, _ = child.communicate(timeout=60)
                assert child.returncode == 0
                results.append(json.loads(out.strip().splitlines()[-1]))
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
        after = [a for a in acked if a["id"] > committed]
        if mode == "rotate":
            assert after and {a["session"] for a in after} == {live.id}  # writes after the rotation followed it
        during = [a for a in acked if leased < a["id"] < committing]
        assert {a["uid"].split("-")[0] for a in during} == {f"p{n}" for n in range(WRITERS)}  # none waited
