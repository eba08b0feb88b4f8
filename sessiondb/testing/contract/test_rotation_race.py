"""S-05, S-06, S-46: a late write never lands in a session a rotation just closed.

Writer processes append two-message batches, each with its own uids, to a conversation's
original id while the test's own process rotates the conversation's tip again and again,
its summary keeping every live message verbatim. So, whatever the interleaving, every
acknowledged message must be an active row of the live tip, in its writer's order, and
no session closed by compression may hold an active row: one there was acknowledged
into a session nobody resumes, never compacted (S-46). Bounded by counts, never by time:
how many batches land before, between or after the rotations varies from run to run,
and the claims hold for every interleaving.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

WORKER = textwrap.dedent("""
    import json, sys
    import sessiondb

    location, options, session_id, name, count = json.loads(sys.argv[1])
    done, refused = [], []
    with sessiondb.open_store(location, **options) as store:
        print("ready", flush=True)
        sys.stdin.readline()  # every worker starts together
        for i in range(count):
            try:
                if name.startswith("w"):  # a writer: two messages of its own a batch
                    rows = store.append(session_id, [
                        {"uid": f"{name}-{i}-{k}", "role": role, "content": f"{name} {i} {k}"}
                        for k, role in enumerate(("user", "assistant"))])
                    done.extend(row.uid for row in rows)
                else:  # a rotator: its summary keeps every live message verbatim
                    lease = store.begin_compaction(session_id)
                    live = [m.to_dict() for m in store.transcript(lease.session_id)]
                    summary = {"uid": f"{name}-gist-{i}", "role": "system", "content": f"summary {i}"}
                    done.append(store.commit_compaction(lease, [summary, *live], mode="rotate").id)
            except sessiondb.SessionDBError as error:
                refused.append(type(error).__name__)
    print(json.dumps({"done": done, "refused": refused}), flush=True)
""")


def race(location, options, session_id, **counts):
    """Run the workers together, each named with its count (`w…` append batches, `r…`
    rotate): what each did (uids acknowledged, or tips made), in order, and was refused."""
    procs = {}
    try:
        for name, count in counts.items():
            job = json.dumps([str(location), options, session_id, name, count])
            procs[name] = subprocess.Popen([sys.executable, "-c", WORKER, job],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        for proc in procs.values():
            assert proc.stdout.readline().strip() == "ready"
        for proc in procs.values():
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = {}
        for name, proc in procs.items():
            out, _ = proc.communicate(timeout=300)
            assert proc.returncode == 0
            results[name] = json.loads(out.strip().splitlines()[-1])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def check_conversation(store, session_id, results):
    """Every acknowledged message is an active row of the live tip, in its writer's order;
    no session closed by compression holds an active row; verify() finds nothing."""
    tip = store.tip(session_id)
    assert tip.ended_at is None
    closed = [s.id for s in store.lineage(session_id) if s.end_reason == "compression"]
    misplaced = [m.uid for s in closed for m in store.transcript(s)]
    assert misplaced == [], f"{len(misplaced)} acknowledged messages are active rows of closed sessions"
    live = [m.uid for m in store.transcript(tip.id)]
    assert [m.uid for m in store.resume(session_id)] == [m.uid for m in store.resume(tip.id)] == live
    for name, result in results.items():
        if name.startswith("w"):
            assert [uid for uid in live if uid.startswith(f"{name}-")] == result["done"]
    report = store.verify()
    assert report.ok, report.problems
    return closed


@pytest.mark.parametrize("writers, batches, rotations", [
    (4, 25, 10),
    pytest.param(4, 400, 150, marks=pytest.mark.long),
])
@pytest.mark.across_processes
def test_s46_appends_racing_rotations_all_land_in_the_live_tip_in_each_writers_order(
        store, store_location, writers, batches, rotations):
    location, options = store_location
    sid = store.create_session("gateway", title="busy chat").id
    store.append(sid, [{"uid": f"old-{i}", "role": "user", "content": f"old {i}"} for i in range(4)])

    results = race(location, options, sid, **{f"w{n}": batches for n in range(writers)}, r=rotations)

    assert all(r["refused"] == [] for r in results.values())
    assert sum(len(r["done"]) for n, r in results.items() if n != "r") == 2 * writers * batches
    closed = check_conversation(store, sid, results)
    assert len(closed) == rotations and store.tip(sid).id == results["r"]["done"][-1]


@pytest.mark.across_processes
def test_s46_two_rotators_racing_never_fork_the_conversation(store, store_location):
    """A compaction begun on the original id leases the tip as it is once locked: a lease on
    a session the other rotator just closed would rotate it a second time, into a sibling
    that hides the first continuation's messages."""
    location, options = store_location
    sid = store.create_session("gateway", title="busy chat").id

    results = race(location, options, sid, w0=20, w1=20, ra=8, rb=8)

    assert {e for r in results.values() for e in r["refused"]} <= {"CompactionBusy"}
    assert sum(len(results[w]["done"]) for w in ("w0", "w1")) == 80
    made = results["ra"]["done"] + results["rb"]["done"]
    closed = check_conversation(store, sid, results)
    assert len(closed) == len(made)
    assert len(store.lineage(sid)) == store.verify().checked["sessions"] == 1 + len(made)  # one chain


def behind_the_store(store, change):
    """Change the store's rows directly, as no sessiondb write path would."""
    store.backend.write(change)


def test_s46_verify_reports_an_active_message_in_a_session_a_rotation_closed(store):
    sid = store.create_session("gateway").id
    store.append(sid, [{"uid": f"m{i}", "role": "user", "content": f"turn {i}"} for i in range(3)])
    lease = store.begin_compaction(sid)
    child = store.commit_compaction(lease, [{"uid": "gist", "role": "system", "content": "summary"}], mode="rotate")
    # A session ended with reason compression that nothing continues is its own tip: an
    # import from a tool whose compaction keeps the transcript (Hermes) stores such sessions.
    kept = store.create_session("import").id
    store.append(kept, {"role": "user", "content": "read where it is"})
    store.end_session(kept, "compression")
    assert store.verify().ok

    behind_the_store(store, lambda rows: rows.insert("messages", [{
        "session_id": sid, "uid": "late", "seq": 4, "role": "user", "content": "acknowledged too late",
        "timestamp": 0}]))
    behind_the_store(store, lambda rows: rows.update("sessions", {"id": sid}, set={"message_count": 1}))

    [problem] = store.verify().problems
    assert sid in problem and child.id in problem and "closed by compression" in problem
    assert "1 active message" in problem and kept not in problem
