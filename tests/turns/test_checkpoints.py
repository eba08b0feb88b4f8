"""S-53: checkpoints only where they are true. An agent's turn snapshots the tree before its
first change; diff and restore work on the host; a restore never clobbers a file changed
since the agent's own last write; a session whose tools run in a container gets no
snapshot, no ledger entry, and refusals with the reason."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from sessiondb import InvalidInput, NotFound, open_store
from sessiondb.turns import AgentTurn, CheckpointRefused, Checkpoints, Limits, rollback_command


@pytest.fixture
def checkpoints(store):
    return Checkpoints(store)


def agent_turn(store, session, tree, checkpoints, text="refactor"):
    return AgentTurn.begin(store, session.id, {"role": "user", "content": text}, cwd=tree, checkpoints=checkpoints)


def agent_writes(turn, tree, rel, text):
    """What an agent's file tool does: snapshot before the first change, write, report."""
    turn.before_mutation()
    (tree / rel).parent.mkdir(parents=True, exist_ok=True)
    (tree / rel).write_text(text)
    turn.wrote(rel)


@pytest.fixture
def worked(store, session, tree, checkpoints):
    """A tree the agent changed in one turn: app.py edited, new.py created."""
    (tree / "app.py").write_text("original\n")
    (tree / "README").write_text("keep me\n")
    turn = agent_turn(store, session, tree, checkpoints)
    agent_writes(turn, tree, "app.py", "edited by the agent\n")
    agent_writes(turn, tree, "pkg/new.py", "created by the agent\n")
    turn.finish()
    return turn


def test_a_local_session_diffs_and_restores_what_the_agent_did(worked, checkpoints, session, tree):
    [first] = checkpoints.list(session.id)
    diff = checkpoints.diff(session.id, first.id)
    assert [(c.path, c.change) for c in diff.changes] == [("app.py", "modified"), ("pkg/new.py", "added")]
    assert "-original" in diff.changes[0].patch and "+edited by the agent" in diff.changes[0].patch

    report = checkpoints.restore(session.id, first.id)
    assert [(f.path, f.status) for f in report.files] == [("app.py", "restored"), ("pkg/new.py", "deleted")]
    assert (tree / "app.py").read_text() == "original\n" and not (tree / "pkg" / "new.py").exists()
    assert (tree / "README").read_text() == "keep me\n"
    # The state before the restore was checkpointed first, and restoring it undoes the restore.
    before = checkpoints.get(session.id, report.checkpoint_before)
    assert set(before.files) == {"README", "app.py", "pkg/new.py"}
    checkpoints.restore(session.id, before.id)
    assert (tree / "app.py").read_text() == "edited by the agent\n"


def test_a_restore_refuses_a_file_changed_since_the_agents_last_write(worked, checkpoints, session, tree):
    (tree / "app.py").write_text("the person's fix, made after the agent\n")
    with pytest.raises(CheckpointRefused) as refused:
        checkpoints.restore(session.id, "1")
    statuses = {f.path: (f.status, f.reason) for f in refused.value.report.files}
    assert statuses["app.py"] == ("refused", "changed since the agent's last write")
    assert statuses["pkg/new.py"][0] == "would_restore"
    assert (tree / "app.py").read_text() == "the person's fix, made after the agent\n"  # nothing written
    assert (tree / "pkg" / "new.py").exists()
    assert len(checkpoints.list(session.id)) == 1

    forced = checkpoints.restore(session.id, "1", force=True)
    assert (tree / "app.py").read_text() == "original\n"
    saved = checkpoints.get(session.id, forced.checkpoint_before)
    assert checkpoints.objects.get(saved.files["app.py"]["sha256"]).startswith(b"the person's fix")


def test_a_restore_refuses_a_file_the_agent_never_wrote(worked, checkpoints, session, tree):
    (tree / "README").write_text("a person edited this too\n")
    with pytest.raises(CheckpointRefused, match="README .changed since the checkpoint, not by the agent"):
        checkpoints.restore(session.id, "1")


def test_gitignore_is_honoured_in_a_plain_tree_and_in_a_git_repository(store, session, tree, checkpoints):
    (tree / ".gitignore").write_text("build/\n*.log\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.bin").write_bytes(b"\0" * 10)
    (tree / "debug.log").write_text("noise\n")
    (tree / "main.py").write_text("print(1)\n")
    assert set(checkpoints.take(session.id, tree).files) == {".gitignore", "main.py"}
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / "extra.py").write_text("x = 1\n")
    assert set(checkpoints.take(session.id, tree).files) == {".gitignore", "extra.py", "main.py"}


def test_the_sessiondb_home_inside_the_tree_is_never_snapshotted(tmp_path):
    for name, location in (("home", {"home": ".sessiondb"}), ("file", {"location": "state.db"})):
        tree = tmp_path / name
        tree.mkdir()
        (tree / "app.py").write_text("x\n")
        where = {k: tree / v for k, v in location.items()}
        with open_store(where.pop("location", None), **where) as store:
            sid = store.create_session("cli").id
            store.append(sid, {"role": "user", "content": "the store's own files change with every write"})
            spool = Path(store.location).parent / "spool"
            spool.mkdir(exist_ok=True)
            (spool / "kept.json").write_text("{}")  # the home's other files: not the tree's either
            if name == "home":
                (spool.parent / "backups").mkdir()
                (spool.parent / "backups" / "copy.db").write_text("a forensic copy")
            assert set(Checkpoints(store).take(sid, tree).files) == {"app.py"}, name


def test_nothing_outside_the_tree_is_read_and_large_files_are_skipped(store, session, tree, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the tree\n")
    os.symlink(secret, tree / "link.txt")
    (tree / "big.bin").write_bytes(b"x" * 2048)
    (tree / "small.txt").write_text("ok\n")
    checkpoints = Checkpoints(store, limits=Limits(max_file_bytes=1024))
    taken = checkpoints.take(session.id, tree)
    assert set(taken.files) == {"small.txt"}
    assert "symbolic link" in taken.skipped["link.txt"] and "limit" in taken.skipped["big.bin"]
    with pytest.raises(CheckpointRefused, match="over the checkpoint limit"):
        Checkpoints(store, limits=Limits(max_files=1)).take(session.id, tree)


def test_a_restore_never_writes_through_a_directory_swapped_for_a_link(worked, checkpoints, session, tree,
                                                                       tmp_path):
    with_package = checkpoints.take(session.id, tree)
    (tree / "app.py").write_text("the agent again\n")
    checkpoints.record_write(session.id, tree / "app.py")
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / "pkg" / "new.py").unlink()
    (tree / "pkg").rmdir()
    os.symlink(outside, tree / "pkg")
    with pytest.raises(CheckpointRefused, match="resolves outside the tree"):
        checkpoints.restore(session.id, with_package.id, force=True)
    assert list(outside.iterdir()) == []
    assert (tree / "app.py").read_text() == "the agent again\n"  # refused before anything was written


def test_a_link_planted_at_a_staging_name_is_never_written_through(worked, checkpoints, session, tree, tmp_path):
    [first] = checkpoints.list(session.id)
    victim = tmp_path / "victim"
    victim.write_text("the attacker's\n")
    for name in (".app.py.sessiondb-restore", ".app.py.tmp", ".app.py.partial"):
        os.symlink(victim, tree / name)
    report = checkpoints.restore(session.id, first.id)
    assert ("app.py", "restored") in [(f.path, f.status) for f in report.files]
    assert (tree / "app.py").read_text() == "original\n" and victim.read_text() == "the attacker's\n"


def test_a_file_swapped_for_a_directory_is_refused_before_anything_is_written(worked, checkpoints, session, tree):
    [first] = checkpoints.list(session.id)
    (tree / "README").write_text("changed by hand\n")  # restored first, were nothing checked up front
    (tree / "app.py").unlink()
    (tree / "app.py").mkdir()
    with pytest.raises(CheckpointRefused, match="app.py is now a link or a directory.*nothing was written"):
        checkpoints.restore(session.id, first.id, force=True)
    assert (tree / "README").read_text() == "changed by hand\n"


def test_contents_are_stored_once_and_private(worked, checkpoints, session, tree, isolated_home):
    checkpoints.take(session.id, tree)
    before = sum(1 for _ in (checkpoints.root / "objects").rglob("*") if _.is_file())
    (tree / "app.py").write_text("one more change\n")
    checkpoints.take(session.id, tree)
    after = sum(1 for _ in (checkpoints.root / "objects").rglob("*") if _.is_file())
    assert after == before + 1  # only the changed file's new content
    assert checkpoints.root.is_relative_to(isolated_home)
    for path in checkpoints.root.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_one_checkpoint_per_turn_before_its_first_change(store, session, tree, checkpoints):
    (tree / "a.txt").write_text("a\n")
    turn = agent_turn(store, session, tree, checkpoints)
    for i in range(3):
        agent_writes(turn, tree, "a.txt", f"a{i}\n")
    assert [c.turn_id for c in checkpoints.list(session.id)] == [turn.id]


@pytest.mark.parametrize("backend, reason", [
    ("docker", "docker container, so host paths are not the agent's paths"),
    ("ssh", "remote machine over ssh, so the paths they touch are that machine's files, not this one's"),
])
def test_a_session_moved_into_a_container_or_to_ssh_gets_no_snapshot_no_ledger_and_refusals(
        store, session, tree, checkpoints, backend, reason):
    (tree / "app.py").write_text("original\n")
    assert checkpoints.environment(session.id).on_host  # local when the session started
    # The configuration changes before the session's first mutation: classified now, not then.
    store.update_metadata(session.id, {"terminal_backend": backend})
    turn = agent_turn(store, session, tree, checkpoints)
    assert turn.before_mutation() is None
    (tree / "app.py").write_text("changed inside the container's view\n")
    turn.wrote("app.py")
    turn.finish()
    assert checkpoints.list(session.id) == []
    assert not (checkpoints.objects.session_dir(session.id) / "ledger.json").exists()
    for call in (lambda: checkpoints.diff(session.id, "1"), lambda: checkpoints.restore(session.id, "1"),
                 lambda: checkpoints.take(session.id, tree)):
        with pytest.raises(CheckpointRefused, match=reason):
            call()
    assert reason in rollback_command(checkpoints, session.id, "")
    assert reason in rollback_command(checkpoints, session.id, "1 force")


def test_the_backend_is_read_at_every_call(store, session, tree):
    backend = ["local"]
    checkpoints = Checkpoints(store, backend=lambda: backend[0])
    (tree / "a.txt").write_text("a\n")
    first = checkpoints.take(session.id, tree)
    for name in ("singularity", "modal", "daytona", "sandbox-plugin"):
        backend[0] = name
        with pytest.raises(CheckpointRefused, match="host paths are not the agent's paths"):
            checkpoints.diff(session.id, first.id)
    backend[0] = "local"
    assert checkpoints.diff(session.id, first.id).changes == []


def test_the_rollback_command_lists_diffs_and_restores(worked, checkpoints, session, tree):
    assert rollback_command(checkpoints, session.id, "").startswith("1. before the agent's changes")
    assert "modified: app.py" in rollback_command(checkpoints, session.id, "diff 1")
    reply = rollback_command(checkpoints, session.id, "1")
    assert "Restored checkpoint 1" in reply and "restored: app.py" in reply
    assert rollback_command(checkpoints, session.id, "frobnicate").startswith("usage:")
    assert "no checkpoint 9" in rollback_command(checkpoints, session.id, "9")


def test_an_unknown_session_or_checkpoint_is_not_found_and_a_bad_id_is_refused(worked, checkpoints, session,
                                                                               tree):
    with pytest.raises(NotFound):
        checkpoints.list("no-such-session")
    with pytest.raises(NotFound):
        checkpoints.diff(session.id, "7")
    for bad in ("../1", "1/../../x", "", 1):
        with pytest.raises(InvalidInput):
            checkpoints.restore(session.id, bad)
    with pytest.raises(InvalidInput):
        checkpoints.restore(session.id, "1", force="yes")
    assert (tree / "app.py").read_text() == "edited by the agent\n" and len(checkpoints.list(session.id)) == 1
