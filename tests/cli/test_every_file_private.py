"""Every file sessiondb leaves behind is private, whatever the umask: the store and its
sidecars, the search index and its sidecars, a backup, an import's checkpoint, checkpoint
objects and records, and `serve`'s token. Under umask 000 (the most permissive: any private
mode was set by sessiondb), each file is 0600 and each directory sessiondb made is 0700.
A file another account planted first, where sessiondb would create one, is refused, never
written into."""

from __future__ import annotations

import os
import pwd
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.api.auth import owner_token
from sessiondb.cli import main
from sessiondb.importers import watch
from sessiondb.turns import AgentTurn, Checkpoints

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "importers"))
from histories import llm  # noqa: E402


@pytest.fixture
def umask_000():
    old = os.umask(0)
    yield
    os.umask(old)


def loose(root: Path) -> list[str]:
    """Every file under `root` not 0600 and every directory not 0700, with its mode."""
    found = []
    for path in [root, *root.rglob("*")]:
        st = os.lstat(path)
        wanted = 0o700 if stat.S_ISDIR(st.st_mode) else 0o600
        if stat.S_IMODE(st.st_mode) != wanted:
            found.append(f"{path.relative_to(root)} {stat.S_IMODE(st.st_mode):o}")
    return found


def test_every_file_a_store_search_backup_import_checkpoint_and_serve_leave_is_private(tmp_path, umask_000):
    home = tmp_path / "home"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "app.py").write_text("original\n")
    with sessiondb.open_store(home=home) as store:
        s = store.create_session("cli", title="private")
        store.append(s.id, [{"uid": "1", "role": "user", "content": "secret plans for the weekend"}])
        assert store.search("secret")  # builds the search index
        turn = AgentTurn.begin(store, s.id, {"role": "user", "content": "edit"}, cwd=tree,
                               checkpoints=Checkpoints(store))
        turn.before_mutation()
        (tree / "app.py").write_text("edited\n")
        turn.wrote("app.py")
        turn.finish()
        watch(store, "llm", llm(tmp_path / "source").path, passes=1)
        done = CliRunner().invoke(main, ["--home", str(home), "backup", str(home / "copy.db")],
                                  catch_exceptions=False)
        assert done.exit_code == 0, done.output
        owner_token(home)  # what `serve` makes on its first start

        names = {p.name for p in home.rglob("*")}
        for expected in ("state.db", "state.db-wal", "state.db-shm", "state.db-search", "state.db-search-wal",
                         "state.db-search-shm", "copy.db", "serve-token", "imports", "checkpoints"):
            assert expected in names, sorted(names)
        assert loose(home) == []  # while the store is open, its sidecars included
    assert loose(home) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="planting a file as another account needs root")
@pytest.mark.parametrize("planted", ["state.db", "state.db-wal", "state.db-search", "state.db-search-wal"])
def test_a_file_another_account_planted_where_a_store_goes_is_refused_not_used(tmp_path, planted):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    trap = shared / planted
    trap.write_bytes(b"")
    os.chmod(trap, 0o666)
    os.chown(trap, pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(sessiondb.SessionDBError, match="belongs to another account"):
        with sessiondb.open_store(shared / "state.db") as store:
            s = store.create_session("cli")
            store.append(s.id, [{"uid": "1", "role": "user", "content": "secret plans"}])
            store.search("secret")
    assert trap.read_bytes() == b""


def test_a_link_planted_where_the_index_goes_is_refused_and_nothing_is_written_through_it(tmp_path):
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    store_file = tmp_path / "state.db"
    os.symlink(victim, tmp_path / "state.db-search")
    with sessiondb.open_store(store_file) as store:
        s = store.create_session("cli")
        store.append(s.id, [{"uid": "1", "role": "user", "content": "secret plans"}])  # the write is never stopped
        with pytest.raises(sessiondb.SessionDBError, match="state.db-search is a link"):
            store.search("secret")
    assert victim.read_bytes() == b""
