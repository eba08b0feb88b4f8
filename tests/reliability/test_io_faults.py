"""I/O fault sweep: the k-th write, sync or truncate fails, once or from then on, for every k.

The canonical workload (appends indexed for search, a compaction, a checkpoint) runs on a
store routed through the VFS shim (`open_store(..., vfs=NAME)`). Whatever fails, once the
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


def run_case(base: Path, path: Path, plan: FaultPlan, appends: int) -> None:
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


def sweep(tmp_path: Path, appends: int, stride: int, figures) -> None:
    base = tmp_path / "base.db"
    with sessiondb.open_store(base) as store:
        store.create_session("cli", session_id=SESSION)
    counter = FaultPlan()
    run_case(base, tmp_path / "count.db", counter, appends)
    assert counter.injected == 0
    # A store that ignored the vfs= hook would count nothing, and the sweep would try nothing.
    assert min(counter.counts.values()) > 0, f"the VFS shim saw no I/O: {counter.counts}"
    tried = failed = injected = 0
    failures = []
    n = 0
    for op in ("write", "sync", "truncate"):
        ks = range(1, counter.counts[op] + 1)
        ks = [k for k in ks if op != "write" or k % stride == 0 or k == 1]
        for persistent in (False, True):
            for k in ks:
                n += 1
                plan = FaultPlan(op=op, k=k, persistent=persistent)
                tried += 1
                try:
                    run_case(base, tmp_path / f"case-{n}.db", plan, appends)
                    assert plan.injected > 0, "the case never reached its fault: it checked nothing"
                except AssertionError as exc:
                    failed += 1
                    failures.append(f"{op} #{k} {'persistent' if persistent else 'once'}: {exc}")
                except Exception as exc:  # noqa: BLE001 - a crash is a failure too
                    failed += 1
                    failures.append(f"{op} #{k} {'persistent' if persistent else 'once'}: {type(exc).__name__}: {exc}")
                injected += plan.injected > 0
    figures.record(
        tried=tried, failed=failed, unit="fault cases",
        detail=f"workload of {counter.counts['write']} writes, {counter.counts['sync']} syncs, "
               f"{counter.counts['truncate']} truncates; every sync and truncate, "
               f"{'every' if stride == 1 else f'every {stride}th'} write; once and persistent; "
               f"{injected} cases hit their fault",
    )
    assert failures == [], "\n".join(failures[:10])
    assert tried > 0 and injected == tried


def test_an_io_error_on_any_write_sync_or_truncate_loses_no_acknowledged_message(tmp_path, figures):
    sweep(tmp_path, appends=4, stride=1, figures=figures)


@pytest.mark.long
def test_long_an_io_error_on_every_write_sync_or_truncate_loses_no_acknowledged_message(tmp_path, figures):
    sweep(tmp_path, appends=12, stride=1, figures=figures)
