"""Maintenance refuses while the store is held (S-19); prune takes only what it should (S-40)."""

from __future__ import annotations

import subprocess
import sys
import time

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
    assert store.prune(never_active=True, dry_run=True).sessions == []


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


def _age(store, session_id, days):
    started = time.time() - days * 86400
    store.backend._file.writer.run(lambda c: c.execute("UPDATE sessions SET started_at = ? WHERE id = ?", (started, session_id)))


def test_prune_never_active_takes_only_old_unused_keyed_sessions(store):
    unused = store.create_session("gateway", session_key="agent:main:telegram:dm:1").id
    young = store.create_session("gateway", session_key="agent:main:telegram:dm:2").id
    used = store.create_session("gateway", session_key="agent:main:telegram:dm:3").id
    store.append(used, {"role": "user", "content": "hello"})
    titled = store.create_session("gateway", session_key="agent:main:telegram:dm:4", title="kept").id
    pinned = store.create_session("gateway", session_key="agent:main:telegram:dm:5").id
    store.set_flags(pinned, pinned=True)
    with_usage = store.create_session("gateway", session_key="agent:main:telegram:dm:6").id
    store.record_usage(with_usage, model="m", input_tokens=1)
    keyless = store.create_session("cli").id
    for sid in (unused, used, titled, pinned, with_usage, keyless):
        _age(store, sid, 45)
    _age(store, young, 10)

    assert store.prune(never_active=True, dry_run=True).sessions == [unused]
    assert store.get_session(unused)  # a dry run removes nothing
    assert store.prune(never_active=True).sessions == [unused]
    with pytest.raises(sessiondb.NotFound):
        store.get_session(unused)
    for sid in (young, used, titled, pinned, with_usage, keyless):
        assert store.get_session(sid)


def test_prune_older_than_keeps_pinned_and_archived_unless_included(store):
    plain, pinned, archived = (store.create_session("cli").id for _ in range(3))
    store.set_flags(pinned, pinned=True)
    store.set_flags(archived, archived=True)
    for sid in (plain, pinned, archived):
        _age(store, sid, 100)
    assert store.prune(older_than=90 * 86400).sessions == [plain]
    assert sorted(store.prune(older_than=90 * 86400, include_pinned=True, include_archived=True).sessions) == sorted(
        [pinned, archived])


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


def test_prune_never_active_removes_the_routing_entries_of_what_it_prunes(store):
    unused = store.create_session("gateway", session_key="agent:main:telegram:dm:9").id
    kept = store.create_session("gateway", session_key="agent:main:telegram:dm:10").id
    store.routing.put("agent:main:telegram:dm:9", unused, "main")
    store.routing.put("agent:main:telegram:dm:10", kept, "main")
    store.append(kept, {"role": "user", "content": "hello"})
    _age(store, unused, 45)
    _age(store, kept, 45)

    assert store.prune(never_active=True).sessions == [unused]
    assert store.routing.get("agent:main:telegram:dm:9") is None
    assert store.routing.get("agent:main:telegram:dm:10").session_id == kept
