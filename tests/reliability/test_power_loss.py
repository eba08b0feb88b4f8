"""Power-loss replay: the files a power cut could leave, rebuilt from a log of every write.

A workload (appends of 3-message batches, each followed by a search, so the search
index's own file is written too; a compaction, a checkpoint, more appends) runs on a new store routed through the recording VFS shim; the test marks
each acknowledgement in the same log. For every crash point k (after each logged event)
the image of each file is what was synced to it before k, plus its writes since its last
sync each applied, dropped or torn (a prefix of whole 512-byte sectors), in several
combinations. Each distinct image is opened with a plain APSW connection (WAL recovery
runs) and must pass `integrity_check` (the store's and the index file's), hold every
batch whole or not at all, hold the compaction whole or not at all, and, at durability
"full", hold every batch acknowledged before k. A sample is also opened as a store that
must take a new write and whose index, caught up, must equal one rebuilt from nothing.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import tempfile
from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb.store.sqlite.index.coverage import differences
from sessiondb.store.sqlite.index.schema import SUFFIX
from vfs import Recorder, ShimVFS

SESSION = "s1"
SECTOR = 512


def record_workload(directory: Path, durability: str, appends: int) -> tuple[list[tuple], Path, dict[int, list[str]]]:
    """Run the workload through a recording VFS; returns (log, db path, batch number -> uids)."""
    directory.mkdir()
    path = directory / "state.db"
    recorder = Recorder()
    shim = ShimVFS(recorder=recorder)
    batches: dict[int, list[str]] = {}
    try:
        with sessiondb.open_store(path, durability=durability, vfs=shim.name) as store:
            store.create_session("cli", session_id=SESSION)
            recorder.mark("ready")
            for i in range(appends):
                uids = [f"b{i}-{j}" for j in range(3)]
                batches[i] = uids
                store.append(SESSION, [{"uid": u, "role": "user", "content": f"kyoto notes {u} " * 20} for u in uids])
                recorder.mark("ack", i)
                store.search("kyoto")  # the index catches up: its file's writes are in the log
                if i == appends // 3:
                    lease = store.begin_compaction(SESSION, holder="replay", ttl=60)
                    store.commit_compaction(lease, [{"uid": "summary", "role": "assistant", "content": "summary"}])
                    recorder.mark("compacted")
                if i == appends // 2:
                    store.optimize()  # checkpoint: WAL into the main file, then the WAL truncated
    finally:
        shim.close()
    return recorder.log, path, batches


def apply(content: bytes | None, events: list[tuple]) -> bytearray:
    data = bytearray(content or b"")
    for ev in events:
        if ev[0] == "write":
            _, _, offset, chunk = ev
            if len(data) < offset:
                data.extend(b"\0" * (offset - len(data)))
            data[offset:offset + len(chunk)] = chunk
        elif ev[0] == "truncate":
            del data[ev[2]:]
    return data


def tear(ev: tuple, rng: random.Random) -> tuple:
    _, name, offset, chunk = ev
    if len(chunk) > SECTOR:
        cut = SECTOR * rng.randrange(1, (len(chunk) + SECTOR - 1) // SECTOR)
    else:
        cut = rng.randrange(0, len(chunk))
    return ("write", name, offset, chunk[:cut])


def variants(pending: list[tuple], rng: random.Random, extra: int) -> list[tuple[str, list[tuple]]]:
    """What survives of the unsynced events: all, none, random subsets, one torn."""
    if not pending:
        return [("synced", [])]
    out = [("applied", pending), ("dropped", [])]
    for _ in range(extra):
        subset = [ev for ev in pending if rng.random() < 0.5]
        out.append(("subset", subset))
        writes = [i for i, ev in enumerate(pending) if ev[0] == "write"]
        if writes:
            torn_at = rng.choice(writes)
            torn = [tear(ev, rng) if i == torn_at else ev for i, ev in enumerate(pending) if i == torn_at or rng.random() < 0.5]
            out.append(("torn", torn))
    return out


def images(log: list[tuple], rng: random.Random, extra: int):
    """Yield (crash point, acked batch numbers, compaction acked, variant, {file: bytes})."""
    durable: dict[str, bytes | None] = {}
    pending: dict[str, list[tuple]] = {}
    acked: list[int] = []
    compacted = False
    for k, ev in enumerate(log, 1):
        kind = ev[0]
        if kind in ("write", "truncate"):
            pending.setdefault(ev[1], []).append(ev)
        elif kind == "sync":
            durable[ev[1]] = bytes(apply(durable.get(ev[1]), pending.pop(ev[1], [])))
        elif kind == "delete":
            durable[ev[1]] = None
            pending.pop(ev[1], None)
        elif kind == "mark":
            if ev[1] == "ack":
                acked.append(ev[2])
            elif ev[1] == "compacted":
                compacted = True
            continue  # a marker changes no file: same images as the event before
        names = sorted(set(durable) | set(pending))
        per_file = {n: variants(pending.get(n, []), rng, extra) for n in names}
        count = max(len(v) for v in per_file.values())
        for i in range(count):
            files, label = {}, []
            for n in names:
                name_variant, events = per_file[n][i % len(per_file[n])]
                base = durable.get(n)
                files[n] = None if base is None and not events else bytes(apply(base, events))
                label.append(name_variant)
            yield k, list(acked), compacted, "/".join(label), files


def verify_image(directory: Path, db_name: str, files: dict[str, bytes | None], batches, acked, compacted, full) -> list[int]:
    """Check one image; returns the acknowledged batches it lacks (none allowed when `full`)."""
    for n, content in files.items():
        if content is not None:
            (directory / Path(n).name).write_bytes(content)
    db = directory / Path(db_name).name
    if not db.exists():
        assert not acked, "acknowledged batches but no database file"
        return []
    conn = apsw.Connection(str(db))
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        if "messages" not in tables:
            assert not acked, "acknowledged batches but no schema"
            return []
        rows = conn.execute("SELECT uid, state FROM messages").fetchall()
    finally:
        conn.close()
    index = Path(f"{db}{SUFFIX}")
    if index.exists() and index.stat().st_size:
        conn = apsw.Connection(str(index))
        try:  # derived data at synchronous=NORMAL: it may lose commits, never its consistency
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)], "search index file damaged"
        finally:
            conn.close()
    uids = [u for u, _ in rows]
    assert len(uids) == len(set(uids)), "a message is stored twice"
    present = set(uids)
    for number, batch in batches.items():
        assert set(batch) <= present or not (set(batch) & present), f"batch {number} half written"
    states = {s for _, s in rows}
    assert ("summary" in present) == ("compacted" in states), "compaction half published"
    lost = [n for n in acked if not set(batches[n]) <= present]
    if full:
        assert lost == [], f"acknowledged batches lost: {lost}"
        if compacted:
            assert "summary" in present, "an acknowledged compaction was lost"
    return lost


def replay(tmp_path: Path, durability: str, appends: int, extra: int, sample_every: int, figures, seed: int = 10):
    log, db_path, batches = record_workload(tmp_path / f"recorded-{durability}", durability, appends)
    rng = random.Random(seed)
    seen: set[bytes] = set()
    tried = failed = crash_points = lost_acks = 0
    failures: list[str] = []
    # Images are small and never synced: build them in memory-backed storage when there is one.
    shm = Path("/dev/shm")
    scratch = (Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() else tmp_path) / "image"
    for k, acked, compacted, label, files in images(log, rng, extra):
        digest = hashlib.blake2b(repr(sorted((n, c) for n, c in files.items())).encode(), digest_size=16).digest()
        if digest in seen:
            continue
        seen.add(digest)
        tried += 1
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            lost_acks += bool(verify_image(scratch, str(db_path), files, batches, acked, compacted, durability == "full"))
            if tried % sample_every == 0 and (scratch / db_path.name).exists():
                copy = tmp_path / f"sample-{tried}"
                shutil.copytree(scratch, copy)
                with sessiondb.open_store(copy / db_path.name) as store:
                    try:
                        store.get_session(SESSION)
                    except sessiondb.NotFound:  # cut before the session was created
                        store.create_session("cli", session_id=SESSION)
                    store.append(SESSION, {"uid": "after-power-loss", "role": "user", "content": "back kyoto"})
                    assert "after-power-loss" in {h.uid for h in store.search("kyoto", limit=1000)}
                assert differences(copy / db_path.name) == [], "the index did not catch up after the power cut"
                shutil.rmtree(copy)
        except Exception as exc:  # noqa: BLE001 - any failure of an image is reported
            failed += 1
            failures.append(f"crash point {k} ({label}): {type(exc).__name__}: {exc}")
    crash_points = sum(1 for ev in log if ev[0] != "mark")
    events = {kind: sum(1 for ev in log if ev[0] == kind) for kind in ("write", "sync", "truncate", "delete")}
    figures.record(
        tried=tried, failed=failed, unit="images",
        detail=f"durability {durability}: {crash_points} crash points over {events['write']} writes, "
               f"{events['sync']} syncs, {events['truncate']} truncates, {events['delete']} deletes; "
               f"{len(batches)} acknowledged batches; distinct images only"
               + ("" if durability == "full" else f"; {lost_acks} images lack an acknowledged batch (allowed at normal)"),
    )
    shutil.rmtree(scratch.parent if scratch.parent != tmp_path else scratch, ignore_errors=True)
    assert failures == [], "\n".join(failures[:10])
    return tried, lost_acks


def test_a_power_cut_at_any_point_keeps_every_acknowledged_batch_whole(tmp_path, figures):
    assert replay(tmp_path, "full", appends=6, extra=1, sample_every=100, figures=figures)[0] >= 1000


def test_a_power_cut_at_normal_durability_never_corrupts_or_splits_a_batch(tmp_path, figures):
    _, lost_acks = replay(tmp_path, "normal", appends=3, extra=1, sample_every=100, figures=figures)
    # The control: normal durability does not sync each commit, so some images lack an
    # acknowledged batch. Seeing them shows the replay can see a lost acknowledgement.
    assert lost_acks > 0


@pytest.mark.long
def test_long_a_power_cut_at_any_point_keeps_every_acknowledged_batch_whole(tmp_path, figures):
    assert replay(tmp_path, "full", appends=60, extra=6, sample_every=200, figures=figures, seed=11)[0] >= 20000


@pytest.mark.long
def test_long_a_power_cut_at_normal_durability_never_corrupts_or_splits_a_batch(tmp_path, figures):
    assert replay(tmp_path, "normal", appends=60, extra=3, sample_every=200, figures=figures, seed=12)[1] > 0
