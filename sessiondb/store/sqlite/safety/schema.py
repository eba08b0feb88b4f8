"""The schema check that open and the doctor share, so that they agree (S-29).

A store's `sqlite_schema` is compared with the reference: the frozen SQL of exactly the
migrations the file records (a file at an older version lacks the later objects and is
not damaged for it). What is found, and the class and repair of each:

- an entry garbled (its SQL differs) or missing: `schema` for an index, trigger or view
  (recreated from the migrations), `structural` for a table (its rows cannot be made up);
- an object with more than one entry: `schema` when the entries are identical (the extra
  ones are deleted) or belong to an index, trigger or view (recreated); `structural` for
  a table whose entries differ;
- a half-migrated file, the objects of a migration it does not record: `schema` when all
  of them are there exactly as the migration builds them (its record is written), else
  `structural`.

store.py runs the check when it opens a file's writer, before any migration or write:
whatever it finds refuses the open, and the doctor reports the same findings. It reads
only sqlite_schema and schema_migrations, so it costs no more than the schema is long.
Damage that only the integrity check can see (pages, b-tree contents) is the doctor's,
and stops writes when a write meets it (S-15).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache

import apsw

from ....errors import Cause, StoreDamaged
from ..connect import transaction
from ..migrations import MIGRATIONS
from .integrity import SCHEMA, STRUCTURAL

RECREATE, DEDUPE, RECORD = "recreate", "dedupe", "record"  # what repair does about a finding
Entries = dict[str, list[tuple[str, "str | None", int]]]  # name -> (type, sql, rootpage) of each entry
_DERIVED = ("index", "trigger", "view")  # objects the migrations' SQL recreates without loss


@dataclass(frozen=True)
class SchemaFinding:
    cls: str  # SCHEMA or STRUCTURAL
    text: str
    name: str  # the object (or, for RECORD, the migration)
    action: str | None  # what repair does; None: nothing in place can


@lru_cache(maxsize=8)
def reference_schema(applied: frozenset[str]) -> dict[str, tuple[str, str, str | None]]:
    """name -> (type, tbl_name, sql) of a healthy store with exactly these migrations applied.

    Names this release does not know (a newer file) add nothing.
    """
    conn = apsw.Connection(":memory:")
    try:
        with conn:
            for name, apply in MIGRATIONS:
                if name in applied:
                    apply(conn)
        return {name: (kind, table, sql) for kind, name, table, sql in
                conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema")}
    finally:
        conn.close()


def applied_migrations(conn: apsw.Connection) -> frozenset[str] | None:
    """The migrations the file records; None when it has no record (a new, empty file)."""
    if not conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'").fetchone():
        return None
    return frozenset(r[0] for r in conn.execute("SELECT name FROM schema_migrations"))


def schema_findings(conn: apsw.Connection) -> list[SchemaFinding]:
    """What is wrong with the file's schema (nothing for a healthy or a new file)."""
    with _one_snapshot(conn):
        applied = applied_migrations(conn)
        if applied is None:
            return []
        entries: Entries = defaultdict(list)
        for kind, name, sql, root in conn.execute("SELECT type, name, sql, rootpage FROM sqlite_schema"):
            entries[name].append((kind, sql, root))
    # A half-migrated file is judged as it will be once its missing records are written:
    # the migration it does not record may have dropped objects of an earlier one.
    unrecorded = _unrecorded(applied, entries)
    reference = reference_schema(applied | {f.name for f in unrecorded if f.action == RECORD})
    found = []
    for name, (kind, _table, sql) in reference.items():
        rows = entries.get(name, [])
        derived = kind in _DERIVED
        if not rows:
            found.append(SchemaFinding(SCHEMA if derived else STRUCTURAL, f"the {kind} {name} is missing from the "
                                       "schema", name, RECREATE if derived else None))
        elif len(rows) > 1:
            # Identical entries (one b-tree, named twice) lose nothing when all but one go.
            same = all(row == rows[0] for row in rows) and rows[0][:2] == (kind, sql)
            action = DEDUPE if same else RECREATE if derived else None
            found.append(SchemaFinding(SCHEMA if action else STRUCTURAL, f"the schema holds {len(rows)} entries for "
                                       f"the {kind} {name}" + ("" if same else ", and they differ"), name, action))
        elif rows[0][:2] != (kind, sql):
            same_kind = derived and rows[0][0] == kind
            found.append(SchemaFinding(SCHEMA if same_kind else STRUCTURAL, f"the schema entry of the {kind} {name} "
                                       "is garbled", name, RECREATE if same_kind else None))
    return found + unrecorded


@contextmanager
def _one_snapshot(conn: apsw.Connection) -> Iterator[None]:
    """The records and the schema read in one read transaction. Read apart, a migration that
    another process opening a new store commits between the two reads shows its objects
    without its record: a healthy file taken for a half-migrated one, and the open refused (S-56)."""
    if conn.in_transaction:
        yield  # the caller's transaction is the snapshot already
        return
    with transaction(conn):
        yield


def _unrecorded(applied: frozenset[str], entries: Entries) -> list[SchemaFinding]:
    """Migrations whose objects are in the file although it does not record them."""
    found = []
    done = set(applied)
    for migration, _apply in MIGRATIONS:
        if migration in done:
            continue
        before, after = reference_schema(frozenset(done)), reference_schema(frozenset(done | {migration}))
        built = {name: row for name, row in after.items() if name not in before}
        present = [name for name in built if name in entries]
        if not present:
            break  # the file stops here: later migrations are simply not applied yet
        dropped = [name for name in before if name not in after]
        whole = all(len(entries.get(name, ())) == 1 and entries[name][0][:2] == (kind, sql)
                    for name, (kind, _t, sql) in built.items()) and not any(name in entries for name in dropped)
        found.append(SchemaFinding(
            SCHEMA if whole else STRUCTURAL,
            f"the file holds {'all' if whole else 'some'} of the objects of migration {migration} "
            f"({', '.join(sorted(present)[:3])}) but does not record it: it is half-migrated",
            migration, RECORD if whole else None))
        if not whole:
            break
        done.add(migration)
    return found


def refuse_damaged_schema(conn: apsw.Connection, db_path: object) -> None:
    """Raise StoreDamaged (cause corrupt) when the schema check finds anything, before any
    migration or write; the doctor reports the same findings."""
    findings = schema_findings(conn)
    if findings:
        raise StoreDamaged(
            f"the schema of {db_path} is damaged ({findings[0].text}); sessiondb did not write to it. Quit "
            "every process using it and run `sessiondb doctor`.", Cause.CORRUPT)
