"""Snippets for hits of the contentless index.

The index keeps no copy of the text (it stays in `messages` only), so FTS5 cannot cut a
snippet from it. The few hits a search returns are put into a small in-memory FTS5 table
with the same tokenizer and matched again with the same expression, so the snippet (which
words are highlighted, where it is cut) is exactly what FTS5 makes of an indexed text.
One such connection per thread; each use is rolled back, leaving its tables empty.
"""

from __future__ import annotations

import threading

import apsw

from . import schema

_local = threading.local()


def _scratch() -> apsw.Connection:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = apsw.Connection(":memory:")
        for name, tokenizer in schema.TOKENIZERS.items():
            conn.execute(f"CREATE VIRTUAL TABLE {name} USING fts5(text, tokenize='{tokenizer}')")
        _local.conn = conn
    return conn


def snippets(index: str, match: str, texts: dict[int, str], marks: tuple[str, str, str], tokens: int) -> dict[int, str]:
    """The snippet of each text (by message id) for `match` on `index`'s tokenizer."""
    if not texts:
        return {}
    conn = _scratch()
    opening, closing, ellipsis = marks
    # Rolled back, not deleted: deleting from FTS5 tokenizes every text again to find its
    # entries, and rolling back an in-memory transaction costs next to nothing.
    conn.execute("BEGIN")
    try:
        conn.executemany(f"INSERT INTO {index}(rowid, text) VALUES (?, ?)", list(texts.items()))
        return dict(conn.execute(
            f"SELECT rowid, snippet({index}, 0, ?, ?, ?, ?) FROM {index} WHERE {index} MATCH ?",
            (opening, closing, ellipsis, tokens, match),
        ).fetchall())
    finally:
        conn.execute("ROLLBACK")
