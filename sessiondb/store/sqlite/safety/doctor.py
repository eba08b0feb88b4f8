"""The doctor: what state a store file is in, what class of damage it has, and the repair
of the classes that can be repaired in place. This module is the doctor's one name for
its callers; the work lives in the modules it gathers:

- examine.py: the read-only examination and its report;
- integrity.py: the integrity check and the classification of what it finds;
- repair.py: the in-place repair (and RepairRefused);
- probe.py: the startup probe store.py runs after an unclean shutdown.

Damage classes, worst first:

- `structural`: the file's own structure or table data is damaged: the header is not
  SQLite's, the file is shorter than its header says, a table's b-tree (sessions,
  messages...) or the freelist is damaged, or a table's schema entry is unreadable.
  Nothing in place can heal it; `recover` rebuilds what is readable into a new file.
- `schema`: a schema object that the migrations can recreate is damaged: an index,
  trigger or view whose entry in `sqlite_schema` is garbled, missing or duplicated, an
  object named twice by identical entries, a half-migrated file (a migration's objects
  all there but its record missing), or a b-tree index whose content disagrees with its
  table. Repair rewrites the entry from the migrations' own (frozen) SQL and rebuilds
  (REINDEX) the index, deletes the extra identical entries, or writes the missing record
  (schema.py).
- `index`: the full-text search index is damaged: its own file (`<store>-search`) fails
  its integrity check, or, in a store before migration 0006, the in-file FTS5 tables
  (`messages_fts`, `messages_trigram` and their shadow tables) are damaged or marked
  stale. Repair deletes the index file (it is built again from the messages) or rebuilds
  the in-file tables.
- `none`.

The integrity check is `PRAGMA quick_check` (which in SQLite 3.44+ also runs each FTS5
table's own check, on a read-only connection), stopped after a time budget on large
files (the report says it was partial); `deep` runs the full `integrity_check` without a
budget. The FTS5 `'integrity-check'` command is not used for examination: it is an
INSERT and needs a writable connection.
"""

from __future__ import annotations

from .examine import QUICK_BUDGET, Report, examine, open_readonly, recover_steps
from .integrity import FTS_TABLES, INDEX, NONE, SCHEMA, SEVERITY, STRUCTURAL, classify_lines
from .probe import STARTUP_BUDGET, startup_probe, unclean_shutdown
from .repair import RepairRefused, Replay, repair, repair_connection
from .schema import reference_schema

__all__ = [
    "FTS_TABLES", "INDEX", "NONE", "QUICK_BUDGET", "SCHEMA", "SEVERITY", "STARTUP_BUDGET", "STRUCTURAL",
    "RepairRefused", "Replay", "Report", "classify_lines", "examine", "open_readonly", "recover_steps",
    "reference_schema", "repair", "repair_connection", "startup_probe", "unclean_shutdown",
]
