"""I/O fault sweep: the k-th write, sync or truncate fails, once or from then on, for every k.

The canonical workload (appends indexed for search, a compaction, a checkpoint) runs on a
store routed through the VFS shim (`open_store(..., vfs=NAME)`). Each case counts its own
operations: how many a run makes depends on its threads, so k goes up until a run makes
fewer than k, and every case before that one injected its fault. The default run fails
every fifth write (and every sync and truncate); the long tier fails every write, on this
workload and on a longer one. Whatever fails, once the
store is closed and opened again through the normal VFS: `integrity_check` and the
full-text integrity check pass, every acknowledged message is there, every refused batch
is absent or whole, and the store takes new writes.

A Python VFS that raises hands SQLite the error code and APSW raises the exception again
when the call returns, even from a close whose checkpoint SQLite itself gives up on
quietly; such a close in the writer thread shows up as an unhandled thread exception,
which is expected here and filtered.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import sessiondb
from sessiondb import SessionDBError
from checks import assert_intact
from vfs import FaultPlan, ShimVFS

SESSION = "s1"
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def workload(store, appends: int) -> tuple[list[list[str]], list[list[str]], bool | None]:
    """Run the workload; returns (acknowledged batches, refused batches, compaction acked)."""
    acked, refused = [], []

    def append(batch_uids):
        try:
            store.append(SESSION, [{"uid": u, "role": "user", "content": f"words about {u} kyoto"} for u in batch_uids])
        except SessionDBError:
            refused.append(batch_uids)
        else:
            acked.append(batch_uids)

    for i in range(appends):
        append([f"m{i}-{j}" for j in range(2)])
    compacted = None
    try:
        lease = store.begin_compaction(SESSION, holder="sweep", ttl=60)
        store.commit_compaction(lease, [{"uid": "summary", "role": "assistant", "content": "a summary"}])
        compacted = True
    except SessionDBError:
        compacted = False
    append(["after-0", "after-1"])
    try:
        store.optimize()  # merges the indexes and checkpoints the WAL into the main file
    except SessionDBError:
        pass
    append(["last-0", "last-1"])
    return acked, refused, compacted


def run_case(base: Path, path: Path, plan: FaultPlan, appends: int) -> int:
    """One run of the workload under `plan`, then the checks; how many batches were acknowledged."""
    shutil.copy(base, path)
    shim = ShimVFS(plan)
    try:
        try:
            store = sessiondb.open_store(path, vfs=shim.name)
        except SessionDBError:
            acked, refused, compacted = [], [], None  # the fault hit the open itself
        else:
            try:
                acked, refused, compacted = workload(store, appends)
            finally:
                try:
                    store.close()
                except SessionDBError:
                    pass
    finally:
        shim.close()

    assert_intact(path)
    with sessiondb.open_store(path) as store:
        stored = [m.uid for m in store.transcript(SESSION, include_compacted=True)]
        assert len(stored) == len(set(stored)), "a message is stored twice"
        present = set(stored)
        for batch in acked:
            assert set(batch) <= present, f"acknowledged {batch} lost"
        for batch in refused:
            assert set(batch) <= present or not (set(batch) & present), f"refused batch {batch} half written"
        if compacted:
            assert "summary" in present
        store.append(SESSION, {"uid": "new", "role": "user", "content": "new write"})
        assert store.transcript(SESSION)[-1].uid == "new"
        found = {hit.uid for hit in store.search("kyoto", limit=1000)}
        assert found == present - {"summary"}, "the search index disagrees with the stored messages"
    return len(acked)


def sweep(tmp_path: Path, appends: int, stride: int, figures) -> None:
    """Fail the k-th operation of each kind for k = 1, 2, ... until a run makes fewer than k.

    How many writes a run makes depends on its threads (the index catches up in batches of
    whatever has been acknowledged by then), so no run is taken as the measure of another:
    each case counts its own operations, a case that never reached its k ends the sweep of
    that kind (it ran fault-free, and is checked as such), and every case before it
    injected its fault."""
    base = tmp_path / "base.db"
    with sessiondb.open_store(base) as store:
        store.create_session("cli", session_id=SESSION)
    batches = appends + 2  # the workload's appends, one after the compaction, one after the checkpoint
    tried = failed = acks = once = 0
    failures = []
    reached: dict[tuple[str, bool], int] = {}
    n = 0
    for op in ("write", "sync", "truncate"):
        for persistent in (False, True):
            k = 1
            while True:
                n += 1
                plan = FaultPlan(op=op, k=k, persistent=persistent)
                case = f"{op} #{k} {'persistent' if persistent else 'once'}"
                try:
                    acked = run_case(base, tmp_path / f"case-{n}.db", plan, appends)
                except AssertionError as exc:
                    failures.append(f"{case}: {exc}")
                    acked = None
                except Exception as exc:  # noqa: BLE001 - a crash is a failure too
                    failures.append(f"{case}: {type(exc).__name__}: {exc}")
                    acked = None
                if plan.injected == 0:  # this run made fewer than k: the sweep of this kind is done
                    reached[op, persistent] = k - 1
                    if acked is not None and acked != batches:
                        failures.append(f"{case} (no fault) acknowledged {acked} of {batches} batches")
                    failed += acked != batches
                    break
                tried += 1
                once += not persistent
                failed += acked is None
                acks += acked or 0
                step = stride if op == "write" else 1  # syncs and truncates are few: every one
                k = step if k == 1 and step > 1 else k + step
    figures.record(
        tried=tried, failed=failed, unit="fault cases",
        detail=f"workload of {batches} appends, a compaction and a checkpoint; "
               f"{'every' if stride == 1 else f'every {stride}th'} write, every sync and every truncate "
               f"as far as each run went (up to {min(reached['write', False], reached['write', True])} writes, "
               f"{min(reached['sync', False], reached['sync', True])} syncs and "
               f"{min(reached['truncate', False], reached['truncate', True])} truncates), once and persistent; "
               f"every case injected its fault; {acks} acknowledged batches checked",
    )
    assert failures == [], "\n".join(failures[:10])
    # An acknowledged append made at least one write and one sync: a sweep that stopped
    # short of that (a store that ignored the vfs= hook would stop at k = 1) tried too little.
    short = {key: k for key, k in reached.items() if k < (batches if key[0] != "truncate" else 1)}
    assert short == {}, f"the sweeps ended before the workload's own acknowledgements: {short}"
    # Every case with a fault injected once acknowledged all its batches but at most the
    # one or two its fault refused.
    assert acks >= once * (batches - 2), f"only {acks} acknowledged batches checked over {tried} cases"


def test_an_io_error_on_a_write_sync_or_truncate_loses_no_acknowledged_message(tmp_path, figures):
    sweep(tmp_path, appends=4, stride=5, figures=figures)


@pytest.mark.long
def test_long_an_io_error_on_any_write_sync_or_truncate_of_a_short_workload_loses_no_acknowledged_message(
        tmp_path, figures):
    sweep(tmp_path, appends=4, stride=1, figures=figures)


@pytest.mark.long
def test_long_an_io_error_on_every_write_sync_or_truncate_loses_no_acknowledged_message(tmp_path, figures):
    sweep(tmp_path, appends=12, stride=1, figures=figures)
