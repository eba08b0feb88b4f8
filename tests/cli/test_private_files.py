"""Every file a command writes is 0600 under any umask, replaces an existing destination
atomically (backup and recover never overwrite one), and is never written through a
symlink planted where a temporary file would go. Through the CLI, in this process, so that
the temporary names the CLI could use (they carry its pid) are known to the attacker too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def cli(tmp_path):
    """The CLI under umask 000, the most permissive: any private mode was set by sessiondb."""
    home = tmp_path / "home"
    with sessiondb.open_store(home=home) as store:
        s = store.create_session("cli", title="private")
        store.append(s.id, [{"uid": "1", "role": "user", "content": "secret plans"}])
    old = os.umask(0)

    def run(*args: str):
        return CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)

    run.home = home
    yield run
    os.umask(old)


@pytest.fixture
def shared(tmp_path):
    """A world-writable directory (like /tmp), and a file of the attacker's that any
    write through a planted link would change."""
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, 0o1777)
    victim = tmp_path / "attacker-owned"
    victim.write_text("")
    return directory, victim


def plant(directory: Path, victim: Path, name: str) -> None:
    """Symlinks at the temporary names a writer of `name` might pick: pid-suffixed and plain."""
    pid = os.getpid()
    for temp in (f".{name}.partial-{pid}", f".{name}.{pid}.tmp", f".{name}.partial", f".{name}.tmp",
                 f"{name}.tmp", f".{name}.partial-{pid}-journal"):
        os.symlink(victim, directory / temp)


@pytest.mark.parametrize("fmt", ["jsonl", "md"])
def test_an_export_is_private_replaces_the_old_file_and_writes_through_no_link(cli, shared, fmt):
    directory, victim = shared
    out = directory / f"out.{fmt}"
    plant(directory, victim, out.name)
    out.write_text("old content")
    os.chmod(out, 0o644)
    inode = os.stat(out).st_ino
    done = cli("sessions", "export", "--format", fmt, "-o", str(out))
    assert done.exit_code == 0, done.output
    assert "secret plans" in out.read_text() and mode(out) == 0o600
    assert os.stat(out).st_ino != inode  # replaced by a rename, never rewritten in place
    assert victim.read_text() == ""
    assert not [p for p in directory.iterdir() if not p.is_symlink() and p != out]  # nothing left behind


def test_a_backup_is_private_never_overwrites_and_writes_through_no_link(cli, shared):
    directory, victim = shared
    copy = directory / "copy.db"
    plant(directory, victim, copy.name)
    done = cli("backup", str(copy))
    assert done.exit_code == 0, done.output
    assert mode(copy) == 0o600 and victim.read_text() == ""
    with sessiondb.open_store(copy) as restored:
        assert [s.title for s in restored.list_sessions().items] == ["private"]
    again = cli("backup", str(copy))
    assert again.exit_code == 1 and "already exists" in again.output


def test_a_recovered_store_is_private_and_appears_whole(cli, shared):
    directory, victim = shared
    output = directory / "new.db"
    plant(directory, victim, output.name)
    done = cli("recover", "--source", str(cli.home / "state.db"), "--output", str(output))
    assert done.exit_code == 0, done.output
    assert mode(output) == 0o600 and victim.read_text() == ""
    assert [p.name for p in directory.iterdir() if not p.is_symlink()] == ["new.db"]
    with sessiondb.open_store(output) as recovered:
        assert [s.title for s in recovered.list_sessions().items] == ["private"]


def test_the_repair_ledger_is_private_and_written_through_no_link(cli, shared):
    from sessiondb.store.sqlite.safety import ledger

    directory, victim = shared
    db = directory / "state.db"
    plant(directory, victim, ledger.ledger_path(db).name)
    ledger.record_failure(db, "before-digest", None, "a repair that failed")
    assert mode(ledger.ledger_path(db)) == 0o600 and victim.read_text() == ""


@pytest.mark.parametrize("command", ["backup", "recover"])
def test_a_link_planted_at_the_destination_itself_is_refused_not_followed(cli, shared, command):
    directory, _ = shared
    elsewhere = directory.parent / "where-the-attacker-wants-it.db"
    destination = directory / "new.db"
    os.symlink(elsewhere, destination)  # dangling: it points where nothing is yet
    args = ["backup", str(destination)] if command == "backup" else \
        ["recover", "--source", str(cli.home / "state.db"), "--output", str(destination)]
    done = cli(*args)
    assert done.exit_code == 1 and "already exists" in done.output
    assert not os.path.lexists(elsewhere)
