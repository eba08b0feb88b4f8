"""Errors a library caller can act on (S-17, S-18, S-43): a storage error that reaches an
agent's log is one sentence that names the store (its path, which names the profile) and
the first step: the very sentence the CLI prints for that cause. What the failing layer
said stays on the error (`detail`). Each cause is raised through a real store on a named
profile: a tmpfs filled to the last byte, a filesystem remounted read-only, another
process holding the write lock, bytes garbled under a live writer, a file copied over it,
its WAL deleted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import sessiondb
from sessiondb.cli import main
from sessiondb.errors import Cause, StorageError
from sessiondb.guidance import for_error

sys.path.insert(0, str(Path(__file__).parent))
from writers import PROFILE, LiveWriter, another_store  # noqa: E402


def store_of(home: Path) -> Path:
    return home / "profiles" / PROFILE / "state.db"


def written(home: Path) -> str:
    with sessiondb.open_store(home=home, profile=PROFILE) as store:
        sid = store.create_session("cli", session_id="s1").id
        store.append(sid, [{"role": "user", "content": f"kyoto {i}"} for i in range(20)])
    return sid


def refusal(home: Path, patience: float = 30.0) -> StorageError:
    """What a caller meets first: the open's refusal, or the next append's."""
    try:
        with sessiondb.open_store(home=home, profile=PROFILE, patience=patience) as store:
            store.append("s1", {"role": "user", "content": "one more " + "x" * 6000})
    except StorageError as exc:
        return exc
    raise AssertionError("the store took the write")


def disk_full(home: Path, request) -> StorageError:
    written(home)
    request.getfixturevalue("fill_disk")(home)
    return refusal(home)


def read_only(home: Path, request) -> StorageError:
    written(home)
    subprocess.run(["mount", "-o", "remount,ro", str(home)], check=True)
    return refusal(home)


def locked(home: Path, request) -> StorageError:
    written(home)
    holder = apsw.Connection(str(store_of(home)))
    holder.execute("BEGIN IMMEDIATE")  # holds the write lock until the refusal is in
    try:
        return refusal(home, patience=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _live_refusal(home: Path, request, damage) -> StorageError:
    writer = LiveWriter(home)
    request.addfinalizer(writer.close)
    assert writer.send("append before")["ok"]
    damage(home, writer)
    reply = writer.send("append after")
    assert reply["ok"] is False, reply
    # The writer process is the caller here: its str(exc) and the CLI's sentence for it.
    told = StorageError(reply["error"])
    told.cause = Cause(reply["cause"])
    told.cli = reply["guidance"]
    return told


def replaced(home: Path, request) -> StorageError:
    def copy_over(home, writer):
        assert writer.send("checkpoint")["ok"]
        shutil.copyfile(another_store(home), store_of(home))
    return _live_refusal(home, request, copy_over)


def deleted_wal(home: Path, request) -> StorageError:
    return _live_refusal(home, request, lambda home, writer: Path(f"{store_of(home)}-wal").unlink())


def corrupt(home: Path, request) -> StorageError:
    def garble(home, writer):
        for i in range(40):
            assert writer.send(f"append bulk-{i}")["ok"]
        assert writer.send("checkpoint")["ok"]
        db = store_of(home)
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        (page,) = conn.execute("SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' "
                               "ORDER BY path DESC LIMIT 1").fetchone()
        conn.close()
        with open(db, "r+b") as f:  # another process than the writer
            f.seek((page - 1) * 4096)
            f.write(bytes([0x0D, 0xFF]) + os.urandom(4094))
        poke = apsw.Connection(str(db))  # a write from a third process: the writer re-reads the page
        poke.execute("INSERT OR REPLACE INTO store_meta(key, value) VALUES ('poke', 'x')")
        poke.close()
    return _live_refusal(home, request, garble)


CAUSES = [
    pytest.param(disk_full, Cause.DISK_FULL, True, id="disk_full"),
    pytest.param(read_only, Cause.READ_ONLY, True, id="read_only"),
    pytest.param(locked, Cause.LOCKED, False, id="locked"),
    pytest.param(corrupt, Cause.CORRUPT, False, id="corrupt"),
    pytest.param(replaced, Cause.REPLACED, False, id="replaced"),
    pytest.param(deleted_wal, Cause.DELETED_WAL, False, id="deleted_wal"),
]


@pytest.fixture
def home(request, isolated_home):
    """The home of the store: a small tmpfs of its own for the causes that need one."""
    if request.node.callspec.params["on_a_small_disk"]:
        return request.getfixturevalue("small_disk")
    return isolated_home


@pytest.mark.parametrize("cause_it, cause, on_a_small_disk", CAUSES)
def test_a_storage_error_says_the_clis_sentence_naming_the_store_and_the_first_step(
        home, request, cause_it, cause, on_a_small_disk):
    exc = cause_it(home, request)
    db = store_of(home)
    text = str(exc)
    assert exc.cause is cause, text
    assert str(db) in text and f"profiles/{PROFILE}/" in text, text
    cli = getattr(exc, "cli", None) or for_error(exc, db_path=str(db), profile=PROFILE, home=home).message
    assert text == cli
    assert text.count(". ") == 0 and text.endswith("."), text  # one sentence
    if not hasattr(exc, "cli"):  # raised here: the layer's own words are kept beside it
        assert exc.detail and exc.detail != text


def test_the_cli_prints_the_librarys_sentence_for_a_refused_open(small_disk, fill_disk):
    db = small_disk / "profiles" / PROFILE / "state.db"
    written(small_disk)
    subprocess.run([sys.executable, "-c", "import os, sys, sessiondb\n"
                    "s = sessiondb.open_store(home=sys.argv[1], profile=sys.argv[2])\n"
                    "s.append('s1', {'role': 'user', 'content': 'only in the WAL'})\n"
                    "os._exit(0)\n", str(small_disk), PROFILE], check=True)
    Path(f"{db}-shm").unlink()  # opening must build the shared memory again, and cannot
    fill_disk(small_disk)
    exc = refusal(small_disk)
    assert exc.cause is Cause.DISK_FULL and str(db) in str(exc)

    shown = CliRunner().invoke(main, ["--home", str(small_disk), "-p", PROFILE, "sessions", "list"])
    assert shown.exit_code == 1
    assert shown.output.strip() == f"Error: {exc}"


def test_the_cli_prints_the_librarys_sentence_with_the_profiles_command_once(isolated_home):
    written(isolated_home)
    db = store_of(isolated_home)
    with open(db, "r+b") as f:
        f.write(b"\0" * 100)  # the header is gone: open refuses the file as damaged
    exc = refusal(isolated_home)
    assert exc.cause is Cause.CORRUPT and f"`sessiondb --home {isolated_home} -p {PROFILE} doctor`" in str(exc)

    shown = CliRunner().invoke(main, ["--home", str(isolated_home), "-p", PROFILE, "sessions", "list"])
    assert shown.exit_code == 1
    assert shown.output.strip() == f"Error: {exc}"
