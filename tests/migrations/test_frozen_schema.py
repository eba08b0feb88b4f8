"""A released migration is frozen: the schema each version builds is the checked-in
snapshot of what stores made by that release hold (tests/migrations/schema/)."""

from __future__ import annotations

import sys
from pathlib import Path

import apsw
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import old_stores  # noqa: E402
from sessiondb.store.sqlite.migrations import MIGRATIONS, migrate  # noqa: E402


@pytest.mark.parametrize("version", range(1, old_stores.CURRENT + 1), ids=old_stores.VERSIONS)
def test_each_version_builds_exactly_the_schema_its_release_built(tmp_path, version):
    # Editing a released migration (a trigger's text, a column, even whitespace inside a
    # statement) makes every store it built look damaged to the doctor: it must fail here.
    path = old_stores.build(tmp_path / "old.db", version)
    conn = apsw.Connection(str(path))
    try:
        assert old_stores.schema_of(conn) == old_stores.snapshot(version)
    finally:
        conn.close()


def test_every_migration_has_a_snapshot_and_every_snapshot_a_migration():
    # A new migration comes with the snapshot of the schema it leaves (its release's).
    snapshots = sorted(p.stem for p in old_stores.SCHEMA_DIR.glob("*.sql"))
    assert snapshots == [name for name, _ in MIGRATIONS]


def test_migrations_keep_their_names_and_order():
    assert [name for name, _ in MIGRATIONS] == sorted(name for name, _ in MIGRATIONS)
    assert [name for name, _ in MIGRATIONS][:4] == ["0001_core", "0002_search", "0003_lineage",
                                                     "0004_gateway_routing"]


def test_a_store_migrated_step_by_step_has_the_schema_of_a_new_one():
    conn = apsw.Connection(":memory:")
    for version in range(1, old_stores.CURRENT + 1):
        migrate(conn, MIGRATIONS[:version])
        assert old_stores.schema_of(conn) == old_stores.snapshot(version)
