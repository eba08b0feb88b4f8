"""The server's disk full: the store's tables on a small tmpfs, filled until appends fail.

The test mounts its own tmpfs (`mount -t tmpfs -o size=16m`) in the server's directory,
makes it a tablespace, and gives the store a role whose tables are created there
(`default_tablespace`): the server's WAL and catalogs stay on the real disk, so what
runs out is the room for the store's rows, as on a server whose data disk filled. It
needs root, and is skipped, saying why, when the mount is refused. What must hold: the
failing append raises ServerDiskFull (cause server_disk_full, with its guidance) at once,
nothing acknowledged is lost, nothing refused is stored, and appends resume once space
is freed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid

import psycopg
import pytest

import sessiondb
from sessiondb.errors import Cause, ServerDiskFull, classify
from sessiondb.guidance import for_error

FREE_LEFT = 256 * 1024  # bytes the filler leaves free on the tmpfs


@pytest.fixture
def small_tablespace(pg_server, pg_url, pg_schema):
    """(a URL whose role creates its tables on a 16 MB tmpfs, the tmpfs' mount point), for
    the store in this test's schema."""
    if os.geteuid() != 0:
        pytest.skip("mounting a 16 MB tmpfs needs root (the test mounts its own small disk)")
    name = f"small_{uuid.uuid4().hex[:8]}"
    mount_point = pg_server.root / name  # where the server's own user can reach it
    mount_point.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    shutil.chown(mount_point, "postgres", "postgres")
    (mount_point / "tablespace").mkdir()
    shutil.chown(mount_point / "tablespace", "postgres", "postgres")
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE TABLESPACE {name} LOCATION '{mount_point / 'tablespace'}'")
        admin.execute(f"CREATE ROLE {name} LOGIN SUPERUSER")
        admin.execute(f"ALTER ROLE {name} SET default_tablespace = {name}")
        try:
            yield pg_url.replace("postgres@", f"{name}@", 1), mount_point
        finally:
            admin.execute(f'DROP SCHEMA IF EXISTS "{pg_schema}" CASCADE')  # the store, then its tablespace
            admin.execute(f"DROP TABLESPACE {name}")
            admin.execute(f"REASSIGN OWNED BY {name} TO postgres")  # the shared extensions, if it made them
            admin.execute(f"DROP ROLE {name}")
            subprocess.run(["umount", "-l", str(mount_point)], check=False)
            mount_point.rmdir()


def test_a_full_server_disk_refuses_appends_clearly_loses_nothing_and_recovers(small_tablespace, pg_schema):
    url, disk = small_tablespace
    filler = disk / "filler"
    acked: list[str] = []
    with sessiondb.open_store(url, schema=pg_schema) as store:
        sid = store.create_session("cli").id
        free = shutil.disk_usage(disk).free
        filler.write_bytes(b"\0" * max(free - FREE_LEFT, 0))
        error = None
        for i in range(2_000):
            try:
                # Random text: compression cannot make room for it.
                store.append(sid, {"uid": f"m{i}", "role": "user", "content": f"kyoto {i} " + os.urandom(3000).hex()})
            except sessiondb.SessionDBError as exc:
                error = exc
                break
            acked.append(f"m{i}")
        assert error is not None, "the disk never filled"
        assert acked, "the disk was full before the first append: the fault hit the wrong moment"
        assert isinstance(error, ServerDiskFull), f"{type(error).__name__}: {error}"
        assert classify(error) is Cause.SERVER_DISK_FULL and "no disk space left" in error.detail
        advice = for_error(error, db_path=store.location, profile=None)
        assert advice.cause is Cause.SERVER_DISK_FULL and advice.message.startswith("The database server")
        assert str(error) == advice.message and store.location in str(error)  # the store, in the CLI's words
        with pytest.raises(ServerDiskFull):  # refused the same way again, never hung
            store.append(sid, {"uid": "again", "role": "user", "content": os.urandom(3000).hex()})
        assert [m.uid for m in store.transcript(sid)] == acked
        assert store.get_session(sid).message_count == len(acked)

        filler.unlink()  # space is freed: appends resume on the same handle
        store.append(sid, {"uid": "resumed", "role": "user", "content": "after the disk was freed"})
        acked.append("resumed")
        assert [m.uid for m in store.transcript(sid)] == acked
        assert [h.uid for h in store.search("freed")] == ["resumed"]
        assert store.verify().problems == []
