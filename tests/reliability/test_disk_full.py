"""A full disk: the store on a 2 MB tmpfs, filled until writes fail.

The test mounts its own tmpfs (the `small_disk` fixture of tests/conftest.py), so it needs
root; it is skipped, saying why, when the mount is refused. What must hold: the failing write raises
DiskFull (classify -> Cause.DISK_FULL) promptly, nothing acknowledged is lost, the file
passes its integrity checks, and writes resume once space is freed.
"""

from __future__ import annotations

import shutil
import time

import pytest

import sessiondb
from sessiondb.errors import Cause, DiskFull, classify
from checks import assert_intact

#: What the filler leaves free once the store holds its first session: a few appends'
#: worth, whatever the store's own files take on a fresh 2 MB disk.
ROOM = 20 * 1024


def test_a_full_disk_refuses_writes_clearly_loses_nothing_and_recovers(small_disk, figures):
    path = small_disk / "state.db"
    filler = small_disk / "filler"
    acked: list[str] = []
    attempts = 0
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli", session_id="full").id
        filler.write_bytes(b"\0" * (shutil.disk_usage(small_disk).free - ROOM))
        error = None
        started = time.monotonic()
        for i in range(10_000):
            uid = f"m{i}"
            attempts += 1
            try:
                store.append(sid, {"uid": uid, "role": "user", "content": f"kyoto {i} " + "x" * 6000})
            except sessiondb.SessionDBError as exc:
                error = exc
                break
            acked.append(uid)
        figures.record(tried=attempts, failed=0 if isinstance(error, DiskFull) else 1, unit="appends",
                       detail=f"2 MB tmpfs filled to {ROOM // 1024} KiB free: {len(acked)} appends acknowledged, then "
                              f"{type(error).__name__}; filled in {time.monotonic() - started:.1f} s")
        assert error is not None, "the disk never filled"
        assert isinstance(error, DiskFull), f"{type(error).__name__}: {error}"
        assert classify(error) is Cause.DISK_FULL
        # A second write on the full disk is refused the same way, not hung or damaged.
        with pytest.raises(DiskFull):
            store.append(sid, {"uid": "again", "role": "user", "content": "y" * 6000})
        assert [m.uid for m in store.transcript(sid)] == acked
        assert_intact(path, index_writable=False)

        filler.unlink()  # space is freed: writes resume on the same handle
        store.append(sid, {"uid": "resumed", "role": "user", "content": "after the disk was freed"})
        acked.append("resumed")
    assert_intact(path)
    with sessiondb.open_store(path) as store:
        assert [m.uid for m in store.transcript(sid)] == acked
        assert any(h.uid == "resumed" for h in store.search("freed", limit=10))
