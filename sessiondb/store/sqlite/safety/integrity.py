"""The integrity check a store is examined with, and what class of damage each line of its
output names (the damage classes are described in doctor.py).

`PRAGMA quick_check` (which in SQLite 3.44+ also runs each FTS5 table's own check, on a
read-only connection) or the full `integrity_check`, stopped after a time budget. Its
lines are attributed to the object they name through the schema's root pages: a b-tree
index is the `schema` class, an FTS5 table or shadow table the `index` class, a table
or the freelist `structural`. Used by the doctor and by the startup probe.
"""

from __future__ import annotations

import re
import time

import apsw

from ....errors import FTS_TABLES, Cause, classify

NONE, INDEX, SCHEMA, STRUCTURAL = "none", "index", "schema", "structural"
SEVERITY = {NONE: 0, INDEX: 1, SCHEMA: 2, STRUCTURAL: 3}
MAX_LINES = 50


def worse(a: str, b: str) -> str:
    return a if SEVERITY[a] >= SEVERITY[b] else b


def integrity_lines(conn: apsw.Connection, *, deep: bool, budget: float | None) -> tuple[list[str], bool]:
    pragma = "integrity_check" if deep else "quick_check"
    deadline = None if budget is None else time.monotonic() + budget
    interrupted = [False]

    def progress() -> bool:
        if deadline is not None and time.monotonic() > deadline:
            interrupted[0] = True
            return True
        return False

    conn.set_progress_handler(progress, 10_000)
    lines: list[str] = []
    try:
        for (row,) in conn.execute(f"PRAGMA {pragma}({MAX_LINES})"):
            lines.extend(line for line in str(row).split("\n") if line)
    except apsw.InterruptError:
        return lines, False
    except apsw.Error as exc:
        if classify(exc) is Cause.DISK_FULL:
            raise  # a check the disk stopped says nothing about the file (S-48)
        lines.append(f"the check itself failed: {exc}")
    finally:
        conn.set_progress_handler(None)
    if lines == ["ok"]:
        return [], True
    return lines, not interrupted[0]


_TREE = re.compile(r"^Tree (\d+) page")
_PAGE = re.compile(r"\bpage \d+")
_NAMED_INDEX = re.compile(r"(?:index|from index) ([A-Za-z_][A-Za-z0-9_]*)")


def _is_fts(name: str) -> bool:
    return any(name == t or name.startswith(t + "_") for t in FTS_TABLES)


def classify_lines(lines: list[str], roots: dict[int, tuple], *, schema_broken: bool) -> list[tuple[str, str]]:
    """(class, finding) for each integrity-check line, by the object it names."""
    found: list[tuple[str, str]] = []
    unattributed: list[str] = []
    for line in lines:
        if line.startswith("*** in database"):
            continue
        match = _TREE.match(line)
        if match:
            entry = roots.get(int(match.group(1)))
            if entry is None:
                found.append((STRUCTURAL, line))
            elif _is_fts(entry[1]):
                found.append((INDEX, f"search index {entry[1]}: {line}"))
            elif entry[0] == "index":
                found.append((SCHEMA, f"index {entry[1]}: {line}"))
            else:
                found.append((STRUCTURAL, f"table {entry[1]}: {line}"))
            continue
        if "fts5" in line or any(f'"{t}"' in line for t in FTS_TABLES):
            found.append((INDEX, f"search index: {line}"))
            continue
        match = _NAMED_INDEX.search(line)
        if match and ("missing from index" in line or "entries in index" in line or "non-unique entry" in line):
            name = match.group(1)
            found.append((INDEX if _is_fts(name) else SCHEMA, f"index {name}: {line}"))
            continue
        if schema_broken and line.endswith("never used"):
            continue  # pages of a schema entry that could not be parsed: repaired with it
        unattributed.append(line)
    classes = {cls for cls, _ in found}
    only = next(iter(classes)) if len(classes) == 1 else None
    for line in unattributed:
        if found and ("malformed" in line or line.startswith("the check itself failed")):
            continue  # the check tripping over damage it already attributed
        # A page-level complaint (fragmentation, overlapping cells) beside damage attributed
        # to one repairable object only is that object's page; orphaned pages are too when
        # the repair ends with a VACUUM (the schema class).
        page_level = _PAGE.search(line) and not line.startswith("Freelist") and "never used" not in line
        if only in (INDEX, SCHEMA) and (page_level or (only == SCHEMA and line.endswith("never used"))):
            found.append((only, line))
            continue
        found.append((STRUCTURAL, line))
    return found
