"""I/O faults in the search index's own files never lose or refuse an append.

The index is derived data in its own file, written by the indexer after the
acknowledgement. Here every write, sync or truncate of the index's files fails, once or
from the k-th on, through the VFS shim (the store's own files are untouched by the plan):
every append is acknowledged and stored, a search either answers or reports the failure,
and once the faults are gone the index catches up and equals one rebuilt from nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import sessiondb
from sessiondb import SessionDBError
from checks import assert_intact
from vfs import FaultPlan, ShimVFS

SESSION = "s1"
pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")


def run(path: Path, plan: FaultPlan, appends: int = 12) -> tuple[list[str], int]:
    """Append (and search between appends) through the faulty VFS; (acked uids, failed searches)."""
    acked, failed_searches = [], 0
    shim = ShimVFS(plan)
    try:
        with sessiondb.open_store(path, vfs=shim.name) as store:
            store.create_session("cli", session_id=SESSION)
            for i in range(appends):
                uids = [f"m{i}-{j}" for j in range(2)]
                store.append(SESSION, [{"uid": u, "role": "user", "content": f"kyoto note {u}"} for u in uids])
                acked += uids  # an exception here fails the test: appends must never be refused
                try:
                    store.search("kyoto")
                except SessionDBError:
                    failed_searches += 1
    finally:
        shim.close()
    return acked, failed_searches


@pytest.mark.parametrize("op", ["write", "sync", "truncate"])
@pytest.mark.parametrize("persistent", [False, True], ids=["once", "persistent"])
def test_io_faults_in_the_index_files_never_lose_or_refuse_an_append(tmp_path, op, persistent, figures):
    counter = FaultPlan(only="-search")
    run(tmp_path / "count.db", counter)
    total = counter.counts[op]
    if total == 0:
        pytest.skip(f"the workload makes no {op} of the index files")
    # The counting run only picks the k to try: how many index writes a run makes depends on
    # when the indexer catches up, so each case counts its own, and one that made fewer than
    # its k ran fault-free and is checked as such.
    injected = tried = 0
    for k in sorted({1, 2, total // 2 or 1, total}):
        path = tmp_path / f"case-{k}.db"
        plan = FaultPlan(op=op, k=k, persistent=persistent, only="-search")
        acked, _ = run(path, plan)
        tried += 1
        injected += plan.injected > 0
        assert plan.injected or plan.counts[op] < k, f"{op} #{k} was reached and not failed"
        assert k > 1 or plan.injected, f"the first {op} of the index files was not failed"
        assert_intact(path)  # the index, without faults now, catches up and equals a rebuild
        with sessiondb.open_store(path) as store:
            assert [m.uid for m in store.transcript(SESSION)] == acked
            assert {h.uid for h in store.search("kyoto", limit=100)} == set(acked)
    figures.record(tried=tried, failed=0, unit="index fault cases",
                   detail=f"{op} of the index files failing {'from' if persistent else 'at'} the k-th; "
                          f"{injected} cases hit their fault; every append acknowledged and found")
