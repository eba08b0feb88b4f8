"""Maintenance that rewrites the file refuses while the store is held (S-19); a backup is a private copy."""

from __future__ import annotations

import subprocess
import sys

import apsw
import pytest

import sessiondb
from sessiondb.errors import StoreHeld
from sessiondb.store.sqlite.safety.holders import holders

HOLD = "import sessiondb, sys, time; s = sessiondb.open_store(sys.argv[1]); print('held', flush=True); time.sleep(60)"


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        yield store


@pytest.fixture
def holder(store):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, store.location], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_holders_lists_another_process_with_the_store_open_but_not_this_one(store, holder):
    found = holders(store.location)
    assert [h.pid for h in found] == [holder.pid]
    assert str(found[0]).startswith(f"PID {holder.pid} (") and "sessiondb" in str(found[0])
    assert any(f.endswith("state.db") for f in found[0].files)


def test_holders_keeps_the_deleted_suffix_of_a_removed_sidecar(store, holder, tmp_path):
    store.append(store.create_session("cli").id, {"role": "user", "content": "x"})
    (tmp_path / "state.db-wal").unlink()
    held = [f for h in holders(store.location) for f in h.files]
    assert any(f.endswith("state.db-wal (deleted)") for f in held), held


@pytest.mark.parametrize("action", ["optimize", "vacuum"])
def test_a_rewrite_refuses_while_another_process_holds_the_store(store, holder, action):
    with pytest.raises(StoreHeld) as refused:
        getattr(store, action)()
    assert f"PID {holder.pid} (" in str(refused.value) and "--force" in str(refused.value)
    assert [h.pid for h in refused.value.holders] == [holder.pid]


def test_a_dry_run_is_never_refused(store, holder):
    report = store.vacuum(dry_run=True)
    assert report.dry_run and report.bytes_before > 0
    assert store.optimize(dry_run=True).dry_run


def test_force_runs_anyway_and_says_so(store, holder):
    report = store.optimize(force=True)
    assert report.warnings and str(holder.pid) in report.warnings[0]


def test_vacuum_keeps_every_message_and_the_store_stays_writable(store):
    sid = store.create_session("cli").id
    store.append(sid, [{"role": "user", "content": "x" * 2000} for _ in range(50)])
    victim = store.create_session("cli").id
    store.append(victim, [{"role": "user", "content": "y" * 2000} for _ in range(200)])
    store.delete_session(victim)
    report = store.vacuum()
    assert report.bytes_after < report.bytes_before
    assert len(store.transcript(sid)) == 50
    store.append(sid, {"role": "user", "content": "after the vacuum"})
    assert len(store.transcript(sid)) == 51


def test_an_online_backup_is_a_consistent_private_copy_with_its_own_generation(store, tmp_path):
    sid = store.create_session("cli").id
    store.append(sid, [{"uid": f"m{i}", "role": "user", "content": str(i)} for i in range(100)])
    target = tmp_path / "copy.db"
    assert store.backup(target) == target.stat().st_size
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    with sessiondb.open_store(target) as copy:
        assert [m.uid for m in copy.transcript(sid)] == [f"m{i}" for i in range(100)]
    generation = "SELECT generation FROM store_identity"
    original = store.backend._file.read(lambda c: c.execute(generation).fetchone()[0])
    copied = apsw.Connection(str(target)).execute(generation).fetchone()[0]
    assert copied != original
    with pytest.raises(sessiondb.InvalidInput):
        store.backup(target)  # never overwrites


def _cli(*args):
    from click.testing import CliRunner

    from sessiondb.cli import main

    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_the_optimize_command_names_the_holder_and_exits_1_and_a_dry_run_still_runs(tmp_path, isolated_home):
    with sessiondb.open_store(home=isolated_home, profile="work") as store:
        store.create_session("cli")
        proc = subprocess.Popen([sys.executable, "-c", HOLD, store.location], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        refused = _cli("--home", str(isolated_home), "-p", "work", "sessions", "optimize")
        assert refused.exit_code == 1
        assert f"PID {proc.pid} (" in refused.output and "--force" in refused.output
        assert len(refused.output.strip().splitlines()) == 1

        preview = _cli("--home", str(isolated_home), "-p", "work", "sessions", "vacuum", "--dry-run")
        assert preview.exit_code == 0 and "dry run" in preview.output

        forced = _cli("--home", str(isolated_home), "-p", "work", "sessions", "optimize", "--force", "--json")
        assert forced.exit_code == 0
        report = __import__("json").loads(forced.stdout)
        assert report["action"] == "optimize" and str(proc.pid) in report["warnings"][0]
    finally:
        proc.kill()
        proc.wait()


def test_the_backup_command_writes_a_copy_and_refuses_to_overwrite(tmp_path, isolated_home):
    with sessiondb.open_store(home=isolated_home) as store:
        store.create_session("cli", title="kept")
    target = tmp_path / "backup.db"
    assert _cli("--home", str(isolated_home), "backup", str(target)).exit_code == 0
    with sessiondb.open_store(target) as copy:
        assert [s.title for s in copy.list_sessions().items] == ["kept"]
    again = _cli("--home", str(isolated_home), "backup", str(target))
    assert again.exit_code == 1 and "already exists" in again.output
