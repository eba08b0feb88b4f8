"""Where the store's files live and how they are kept: the home and its profiles, 0700/0600
permissions, canonical paths, journal mode and durability on disk, the SQLite version
gate, the network-filesystem policy, and refusing databases that are not ours."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb import InvalidInput, NotASessionStore, UnsupportedSQLite
from sessiondb.home import store_path, validate_profile
from sessiondb.store.sqlite import connect as sqlite_connect
from sessiondb.store.sqlite import store as shared_files
from sessiondb.store.sqlite.connect import check_sqlite_version, filesystem_type, is_network_filesystem


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def header(path) -> bytes:
    """The first 100 bytes of a database file; only read while no handle has it open (S-12)."""
    with open(path, "rb") as f:
        return f.read(100)


def synchronous(store) -> int:
    return store.backend._file.writer.run(lambda c: c.execute("PRAGMA synchronous").fetchone()[0], in_transaction=False)


def write_something(store):
    sid = store.create_session("cli").id
    store.append(sid, [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    return sid


@pytest.fixture
def open_umask():
    """The most permissive umask: any 0600/0700 seen on disk was set by sessiondb."""
    old = os.umask(0)
    yield
    os.umask(old)


# --- permissions --------------------------------------------------------------------------


def test_the_store_and_its_sidecars_are_0600_and_the_home_0700(isolated_home, open_umask):
    with sessiondb.open_store() as store:
        write_something(store)
        db = isolated_home / "state.db"
        assert Path(store.location) == db
        assert store.backend.journal_mode == "wal"
        # While the store is open and has written, the WAL and shared memory exist.
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert path.exists(), path
            assert mode(path) == 0o600, f"{path.name} is {oct(mode(path))}"
        assert mode(isolated_home) == 0o700
    assert mode(isolated_home / "state.db") == 0o600


def test_a_profile_store_and_every_directory_created_for_it_are_private(isolated_home, open_umask):
    with sessiondb.open_store(profile="team-2") as store:
        write_something(store)
        db = isolated_home / "profiles" / "team-2" / "state.db"
        assert Path(store.location) == db
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert mode(path) == 0o600, path
        for d in (isolated_home, isolated_home / "profiles", isolated_home / "profiles" / "team-2"):
            assert mode(d) == 0o700, d


def test_opening_a_store_never_changes_the_mode_of_a_directory_it_did_not_create(tmp_path, open_umask):
    parent = tmp_path / "shared"
    home = parent / "home"
    home.mkdir(parents=True)
    os.chmod(parent, 0o755)
    os.chmod(home, 0o1777)  # a shared folder, like /tmp
    with sessiondb.open_store(home=home) as store:
        write_something(store)
    with sessiondb.open_store(home / "loose" / "x.db") as store:  # a directory it creates is private
        write_something(store)
    assert mode(home) == 0o1777
    assert mode(parent) == 0o755
    assert mode(home / "loose") == 0o700
    assert mode(home / "state.db") == 0o600


def test_an_existing_world_readable_store_file_is_made_private(tmp_path, open_umask):
    path = tmp_path / "loose.db"
    with sessiondb.open_store(path) as store:
        write_something(store)
    os.chmod(path, 0o666)
    with sessiondb.open_store(path) as store:
        write_something(store)
        assert mode(path) == 0o600
        assert mode(f"{path}-wal") == 0o600


# --- profiles and paths -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../x", "A", "", "a" * 65, "a/b", ".hidden", "-lead", "_lead", "sp ace",
                                  "tab\t", "é", "a\x00", 7])
def test_bad_profile_names_are_refused(name, isolated_home):
    with pytest.raises(InvalidInput):
        validate_profile(name)
    with pytest.raises(InvalidInput):
        sessiondb.open_store(profile=name)
    assert not isolated_home.exists()


@pytest.mark.parametrize("name", ["work", "team-2", "a_b", "0", "a" * 64, "main"])
def test_good_profile_names_are_accepted(name):
    assert validate_profile(name) == name


def test_the_default_profile_lives_at_the_root_of_the_home(isolated_home):
    assert store_path() == isolated_home.resolve() / "state.db"
    assert store_path(profile="main") == isolated_home.resolve() / "state.db"
    with sessiondb.open_store(profile="main") as store:
        assert store.profile is None
        assert Path(store.location) == isolated_home / "state.db"
        sid = store.create_session("cli").id
        assert store.get_session(sid).profile is None
    with sessiondb.open_store() as store:
        assert [s.id for s in store.list_sessions().items] == [sid]


def test_a_named_profile_lives_under_profiles(isolated_home):
    assert store_path(profile="work") == isolated_home.resolve() / "profiles" / "work" / "state.db"
    with sessiondb.open_store(profile="work") as store:
        assert store.profile == "work"
        assert Path(store.location) == isolated_home / "profiles" / "work" / "state.db"
        sid = store.create_session("cli").id
        assert store.get_session(sid).profile == "work"
    assert (isolated_home / "profiles" / "work" / "state.db").exists()
    assert not (isolated_home / "state.db").exists()
    # Profiles are separate stores.
    with sessiondb.open_store() as root:
        assert root.list_sessions().items == []


def test_an_explicit_home_wins_over_the_environment(tmp_path, isolated_home):
    other = tmp_path / "elsewhere"
    with sessiondb.open_store(home=other) as store:
        assert Path(store.location) == other / "state.db"
    assert not isolated_home.exists()


def test_a_store_path_excludes_a_home_or_profile():
    with pytest.raises(InvalidInput):
        store_path("/tmp/x.db", profile="work")
    with pytest.raises(InvalidInput):
        sessiondb.open_store("/tmp/x.db", home="/tmp")


def test_a_symlinked_home_reaches_the_same_file_and_the_same_writer(tmp_path):
    real = tmp_path / "real-home"
    link = tmp_path / "link-home"
    real.mkdir()
    link.symlink_to(real, target_is_directory=True)
    a = sessiondb.open_store(home=real)
    b = sessiondb.open_store(home=link)
    c = sessiondb.open_store(link / "state.db")
    try:
        assert a.location == b.location == c.location == str(real / "state.db")
        assert a.backend._file is b.backend._file is c.backend._file
        key = (os.stat(real / "state.db").st_dev, os.stat(real / "state.db").st_ino)
        entries = [f for k, f in shared_files._files.items() if k == key]
        assert entries == [a.backend._file]
        assert a.backend._file.refs == 3
        sid = a.create_session("cli").id
        b.append(sid, {"role": "user", "content": "via the link"})
        assert [m.content for m in c.transcript(sid)] == ["via the link"]
    finally:
        for s in (a, b, c):
            s.close()
    assert key not in shared_files._files


def test_a_hard_link_to_the_store_shares_the_writer_of_the_first_path(tmp_path):
    first = tmp_path / "one.db"
    second = tmp_path / "two.db"
    with sessiondb.open_store(first) as a:
        sid = a.create_session("cli").id
        os.link(first, second)
        with sessiondb.open_store(second) as b:
            assert b.backend._file is a.backend._file
            b.append(sid, {"role": "user", "content": "x"})
            assert a.get_session(sid).message_count == 1


# --- journal mode and durability ----------------------------------------------------------


def test_the_journal_mode_on_disk_is_wal(tmp_path):
    path = tmp_path / "wal.db"
    with sessiondb.open_store(path) as store:
        write_something(store)
        assert store.backend.journal_mode == "wal"
    raw = header(path)  # after close: no live handle has its locks dropped
    assert raw[:16] == b"SQLite format 3\x00"
    assert (raw[18], raw[19]) == (2, 2)


def syncs_after_commit(store) -> bool:
    return store.backend._file.writer.syncs_after_commit


def test_the_writer_syncs_the_wal_after_each_commit_by_default(tmp_path):
    # COMMIT at NORMAL, then the WAL synced before the acknowledgement (sqlite/writer.py).
    with sessiondb.open_store(tmp_path / "s.db") as store:
        write_something(store)
        assert (synchronous(store), syncs_after_commit(store)) == (1, True)


def test_durability_normal_makes_the_writer_synchronous_normal(tmp_path):
    with sessiondb.open_store(tmp_path / "s.db", durability="normal") as store:
        write_something(store)
        assert (synchronous(store), syncs_after_commit(store)) == (1, False)


def test_the_strictest_durability_of_the_open_handles_applies(tmp_path):
    path = tmp_path / "s.db"
    with sessiondb.open_store(path, durability="normal") as relaxed:
        assert syncs_after_commit(relaxed) is False
        with sessiondb.open_store(path):
            assert syncs_after_commit(relaxed) is True
        assert syncs_after_commit(relaxed) is False


@pytest.mark.parametrize("durability", ["FULL", "off", "", None, "extra"])
def test_an_unknown_durability_is_refused(tmp_path, durability):
    with pytest.raises(InvalidInput):
        sessiondb.open_store(tmp_path / "s.db", durability=durability)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("patience", [-1, "10", None])
def test_a_bad_patience_is_refused(tmp_path, patience):
    with pytest.raises(InvalidInput):
        sessiondb.open_store(tmp_path / "s.db", patience=patience)


# --- the SQLite version gate --------------------------------------------------------------


@pytest.mark.parametrize("version", ["3.51.2", "3.45.1", "3.7.17", "3.51.0"])
def test_sqlite_with_the_wal_reset_bug_is_refused(version):
    with pytest.raises(UnsupportedSQLite, match="3.51.3"):
        check_sqlite_version(version)


@pytest.mark.parametrize("version", ["3.51.3", "3.54.1", "3.52.0", "4.0.0", "3.51.3.1"])
def test_sqlite_with_the_fix_is_accepted(version):
    check_sqlite_version(version)


def test_opening_refuses_an_old_sqlite_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setattr(apsw, "sqlite_lib_version", lambda: "3.45.1")
    with pytest.raises(UnsupportedSQLite) as caught:
        sessiondb.open_store(tmp_path / "s.db")
    message = str(caught.value)
    assert "3.45.1" in message and "3.51.3" in message and "apsw" in message
    assert not (tmp_path / "s.db").exists()


# --- the network-filesystem policy ---------------------------------------------------------


MOUNTINFO = r"""
22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw
23 22 0:22 / /proc rw,nosuid - proc proc rw
30 22 0:30 / /srv rw,relatime shared:5 - xfs /dev/vdb rw
31 30 0:31 / /srv/nfs rw,relatime shared:6 - nfs4 server:/export rw,vers=4.2
32 31 0:32 / /srv/nfs/local rw,relatime - tmpfs tmpfs rw
33 22 0:33 / /mnt/my\040disk rw,relatime - cifs //host/share rw
34 22 0:34 / /mnt/data rw - 9p data rw
35 22 0:35 / /home/u/remote rw - fuse.sshfs u@host:/ rw
37 22 0:37 / /mnt/données\040partagées rw - nfs srv:/x rw
38 22 0:38 / /mnt/back\134slash\011tab rw - virtiofs share rw
this line is garbage
36 22 0:36 / /broken rw no-separator-here
"""


@pytest.fixture
def mountinfo(tmp_path):
    path = tmp_path / "mountinfo"
    path.write_text(MOUNTINFO.strip() + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("target", "fstype"),
    [
        ("/", "ext4"),
        ("/var/lib/x.db", "ext4"),
        ("/srv", "xfs"),
        ("/srv/db/state.db", "xfs"),
        ("/srv/nfs", "nfs4"),
        ("/srv/nfs/home/state.db", "nfs4"),
        ("/srv/nfs/local/state.db", "tmpfs"),  # the longest mount-point prefix wins
        ("/srv/nfsish/state.db", "xfs"),  # a prefix of the name is not a parent directory
        ("/mnt/my disk/state.db", "cifs"),  # mountinfo escapes the space as \040
        ("/mnt/data/state.db", "9p"),
        ("/mnt/database/state.db", "ext4"),
        ("/home/u/remote/.sessiondb", "fuse.sshfs"),
        ("/broken/x", "ext4"),  # an unparseable line is skipped
        ("/mnt/données partagées/state.db", "nfs"),  # non-ASCII name with an escaped space
        ("/mnt/back\\slash\ttab/state.db", "virtiofs"),  # escaped backslash and tab
    ],
)
def test_filesystem_type_reads_the_longest_mount_point_holding_the_path(mountinfo, target, fstype):
    assert filesystem_type(Path(target), mountinfo=mountinfo) == fstype


def test_a_later_mount_over_the_same_point_wins(tmp_path):
    path = tmp_path / "mountinfo"
    path.write_text(
        "22 1 0:21 / / rw - ext4 /dev/vda rw\n"
        "40 22 0:40 / /data rw - ext4 /dev/vdc rw\n"
        "41 22 0:41 / /data rw - nfs srv:/x rw\n"
    )
    assert filesystem_type(Path("/data/state.db"), mountinfo=str(path)) == "nfs"


def test_an_unreadable_mountinfo_means_unknown(tmp_path):
    assert filesystem_type(Path("/x"), mountinfo=str(tmp_path / "missing")) is None


@pytest.mark.parametrize("fstype", ["nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "fuse.sshfs", "fuse", "ceph"])
def test_network_and_virtual_filesystems_are_recognised(fstype):
    assert is_network_filesystem(fstype)


@pytest.mark.parametrize("fstype", ["ext4", "tmpfs", "xfs", "btrfs", "zfs", None])
def test_local_filesystems_are_not_network_filesystems(fstype):
    assert not is_network_filesystem(fstype)


def test_a_new_store_on_a_network_filesystem_uses_the_rollback_journal(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_connect, "filesystem_type", lambda path, mountinfo=None: "nfs4")
    path = tmp_path / "remote.db"
    with sessiondb.open_store(path) as store:
        write_something(store)
        assert store.backend.journal_mode == "delete"
        assert not Path(f"{path}-wal").exists()
        assert synchronous(store) == 2
    raw = header(path)
    assert (raw[18], raw[19]) == (1, 1)


def test_a_store_already_in_wal_is_never_downgraded_on_a_network_filesystem(tmp_path, monkeypatch):
    path = tmp_path / "was-local.db"
    with sessiondb.open_store(path) as store:
        sid = write_something(store)
    monkeypatch.setattr(sqlite_connect, "filesystem_type", lambda path, mountinfo=None: "virtiofs")
    with sessiondb.open_store(path) as store:
        assert store.backend.journal_mode == "wal"
        assert store.get_session(sid).message_count == 2
    raw = header(path)
    assert (raw[18], raw[19]) == (2, 2)


def test_this_machines_temporary_directory_has_a_known_filesystem_type(tmp_path):
    assert filesystem_type(tmp_path) not in (None, "")


# --- databases that are not ours --------------------------------------------------------


def _foreign_database(path):
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('mine')")
    conn.close()
    os.chmod(path, 0o644)


def test_a_foreign_database_is_refused(tmp_path):
    path = tmp_path / "other-app.db"
    _foreign_database(path)
    with pytest.raises(NotASessionStore, match="notes"):
        sessiondb.open_store(path)
    conn = apsw.Connection(str(path))
    assert conn.execute("SELECT body FROM notes").fetchall() == [("mine",)]
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type='table'")] == ["notes"]
    conn.close()


def test_refusing_a_foreign_database_leaves_the_file_unchanged(tmp_path):
    path = tmp_path / "other-app.db"
    _foreign_database(path)
    before, before_mode = path.read_bytes(), mode(path)
    with pytest.raises(NotASessionStore):
        sessiondb.open_store(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other-app.db"]
    assert mode(path) == before_mode
    assert path.read_bytes() == before


def test_a_database_of_another_application_is_refused(tmp_path):
    path = tmp_path / "app.db"
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA application_id=1234")
    conn.close()
    with pytest.raises(NotASessionStore, match="another application"):
        sessiondb.open_store(path)


def test_validate_profile_refuses_none():
    with pytest.raises(InvalidInput):
        validate_profile(None)


def test_a_file_that_is_not_a_database_is_refused_with_a_sessiondb_error(tmp_path):
    path = tmp_path / "notes.txt"
    text = b"these are not the pages you are looking for\n" * 200
    path.write_bytes(text)
    try:
        with pytest.raises(sessiondb.SessionDBError):
            sessiondb.open_store(path)
    finally:
        assert path.read_bytes() == text


def test_a_directory_in_place_of_the_store_is_refused_with_a_sessiondb_error(tmp_path):
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(sessiondb.StorageError):
        sessiondb.open_store(tmp_path / "dir.db")


def test_a_store_recording_an_unknown_migration_is_refused_as_newer(tmp_path):
    path = tmp_path / "future.db"
    with sessiondb.open_store(path) as store:
        write_something(store)
    conn = apsw.Connection(str(path))
    conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES ('9999_from_the_future', 0)")
    conn.close()
    with pytest.raises(NotASessionStore, match="newer"):
        sessiondb.open_store(path)
    # Refusing it did not break it for the release that wrote it.
    conn = apsw.Connection(str(path))
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 2
    conn.close()


def test_a_failed_open_leaves_nothing_registered(tmp_path):
    path = tmp_path / "other-app.db"
    _foreign_database(path)
    with pytest.raises(NotASessionStore):
        sessiondb.open_store(path)
    st = os.stat(path)
    assert (st.st_dev, st.st_ino) not in shared_files._files
