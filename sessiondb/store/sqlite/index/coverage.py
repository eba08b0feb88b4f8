"""Is the index true? The incremental index compared with one rebuilt from nothing.

The index holds no text, so FTS5's own integrity check can only say its structure is
sound. What matters is that it holds exactly what indexing the store's messages from
nothing would: the same documents, the same terms at the same positions. `differences`
builds that second index in a scratch file and compares the two, term by term.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import apsw

from . import schema
from .indexer import BATCH, Indexer, index_batch


def contents(conn: apsw.Connection, db: str = "main") -> dict[str, set[tuple]]:
    """Every (term, document, column, offset) of each index in schema `db` of `conn`."""
    out = {}
    for name in schema.TOKENIZERS:
        vocab = f"temp.vocab_{db}_{name}"
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab} USING fts5vocab({db}, {name}, instance)")
        out[name] = set(conn.execute(f"SELECT term, doc, col, offset FROM {vocab}"))
        conn.execute(f"DROP TABLE {vocab}")
    return out


def differences(store: Path, vfs: str | None = None) -> list[str]:
    """What the store's index (caught up first) holds that a rebuild would not, and back."""
    problems: list[str] = []
    indexer = Indexer(store, patience=5.0, vfs=vfs)  # adopts the file (or starts it over) first
    try:
        indexer.catch_up()
    finally:
        indexer.stop()
    live = schema.open_index(store, patience=5.0, vfs=vfs)
    try:
        live.execute(f"INSERT INTO {schema.WORDS}({schema.WORDS}, rank) VALUES ('integrity-check', 1)")
        live.execute(f"INSERT INTO {schema.CJK}({schema.CJK}, rank) VALUES ('integrity-check', 1)")
        with tempfile.TemporaryDirectory(prefix="sessiondb-index-check-") as scratch:
            fresh = schema.open_index(store, patience=5.0, vfs=vfs, path=Path(scratch) / "index")
            try:
                while not index_batch(fresh, BATCH):
                    pass
                expected = contents(fresh)
            finally:
                fresh.close()
        found = contents(live)
    finally:
        live.close()
    for name in schema.TOKENIZERS:
        extra, missing = found[name] - expected[name], expected[name] - found[name]
        if extra:
            problems.append(f"index {name} holds {len(extra)} entries a rebuild would not, e.g. {sorted(extra)[0]}")
        if missing:
            problems.append(f"index {name} lacks {len(missing)} entries, e.g. {sorted(missing)[0]}")
    return problems
