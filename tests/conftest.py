"""Set-up for the tests under tests/: PostgreSQL databases and small disks. Every test's
throw-away home, the clock and the PostgreSQL server are the repository's (conftest.py at
its root, and sessiondb.testing)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def pg_database(pg_server, pg_schema):
    """The URL of a database of this test's own on the suite's server, for what spans the
    schemas of a database, such as the profiles a server holds."""
    import psycopg

    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{pg_schema}"')
    return pg_server.url(pg_schema)


@pytest.fixture
def small_disk(tmp_path):
    """A real 2 MB tmpfs the test mounts (`mount -t tmpfs -o size=2m`), for a disk that fills
    up; skipped, saying why, without root or when the mount is refused."""
    mount_point = tmp_path / "small"
    mount_point.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a 2 MB tmpfs needs root (the test mounts its own small disk)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(disk: Path) -> Path:
    """Write until not one more byte fits on `disk`."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (1 << 16, 1 << 10, 1):
            try:
                while True:
                    f.write(b"\0" * size)
            except OSError:
                continue
    return filler


@pytest.fixture
def fill_disk():
    """`fill_disk(disk)` writes a filler file until `disk` has no byte left; returns its path."""
    return _fill
