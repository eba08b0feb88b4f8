"""The search index's own file: where it lives, what it holds, how a connection to it is made.

The index is derived data (invariant 9), so it is kept out of the store file: `<store>-search`
beside `state.db`, with its own WAL and lock. Nothing in it is needed to acknowledge a
write; it can be deleted whenever no process holds the store and is rebuilt from the
messages. Damage to it can never be damage to the store (S-16 by construction).

What it holds (contentless FTS5: no copy of the text, which stays in `messages` only):

- `words`, tokenizer `unicode61 remove_diacritics 2`: every message's words, case and
  diacritics folded; phrases, prefixes, bm25.
- `stems`, tokenizer `porter unicode61 remove_diacritics 2`: the same words, stemmed by
  the Porter stemmer (English: `researched` and `research` are one word); recall's
  index (sessiondb.recall). A word of another language goes through the same rules
  in the text and in the question, so it finds the same word (not its inflections).
- `thoughts`, tokenizer as `words`: each response's reasoning (a model's thinking, kept
  by importers and adapters as `reasoning`), for a search that asks for it
  (include_reasoning); a search never looks there otherwise.
- `cjk`, tokenizer `trigram remove_diacritics 1`: only the runs of text in scripts written
  without spaces (query.cjk_runs), joined by newlines, of the messages that have any: the
  one place the word tokenizer cannot split words. Trigrams of whole messages would be
  most of the index's bytes.
- `vectors`: each message's vector of meaning (sessiondb.embedding), float32 of unit
  length, for a store opened with an embedder; a message with no text has none.
- `state`: how far the index has followed the store, written in the same transaction as
  the index content it describes: `indexed_to` (every message id up to it is indexed, and
  nothing above it; it only rises), `touched_to` (the store's `search_touched` log is
  applied up to this seq) and the store's generation stamp (an index built for another
  store file is rebuilt, never trusted); the vectors follow the store by marks of their
  own, `embedded_to` and `embedded_touched_to` (an embedder is slower than a tokenizer,
  and one that fails must not hold the words back), and `space`, the embedder whose
  vectors they are ('' before the first).

The words and stems indexes are given query.indexable(text): NFC, a NUL as a space, and
runs of CJK text set apart from the words around them.

Every message is indexed whatever its state: the state is joined in from `messages` at
query time (rewound rows filtered out, compacted ones marked), so rewinding, restoring and
compacting never touch the index. Rows are indexed by id; a row deleted or changed in its
text is logged by the store's triggers (migration 0006) and removed or re-indexed.

Durability: `synchronous=NORMAL` in WAL. A power loss can lose the index's last
transactions, never make it disagree with its own `state`, which rolls back with them; the
next catch-up indexes those messages again.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import apsw

from ....errors import InvalidInput
from ....files import claim_private
from ....home import INDEX_SUFFIXES, SIDECAR_SUFFIXES, make_private
from ..connect import connect, transaction

FILES = INDEX_SUFFIXES  # beside the store file: the index, its WAL, shared memory, journal
SUFFIX = FILES[0]
VERSION = 5  # PRAGMA user_version of the index file's layout (2: marks that only rise; 3: the stems
# index, text NFC; 4: the thoughts index; 5: the vectors; a file of layout 2 or 3 is indexed
# again, one of layout 4 gains the vectors, one of another layout is index damage, rebuilt)
TOOL_TEXT_LIMIT = 8192  # characters of a tool message's output that are indexed
WORDS, STEMS, CJK, THOUGHTS = "words", "stems", "cjk", "thoughts"
TOKENIZERS = {WORDS: "unicode61 remove_diacritics 2", STEMS: "porter unicode61 remove_diacritics 2",
              CJK: "trigram remove_diacritics 1", THOUGHTS: "unicode61 remove_diacritics 2"}

#: How many messages hold each term of the stems index (recall's common words): a view of
#: its term list, made in each reader's temp schema before the reader turns query-only,
#: and found by name once a search attaches the index as `idx`.
TERMS = f"CREATE VIRTUAL TABLE temp.{STEMS}_terms USING fts5vocab(idx, {STEMS}, row)"

_TABLES = "".join(
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5(text, content='', contentless_delete=1, "
    f"tokenize='{tokenizer}');"
    for name, tokenizer in TOKENIZERS.items()
)
_VECTORS = (
    "CREATE TABLE IF NOT EXISTS vectors (rowid INTEGER PRIMARY KEY, vector BLOB NOT NULL) STRICT;"
    "INSERT OR IGNORE INTO state VALUES ('embedded_to', 0), ('embedded_touched_to', 0), ('space', '');"
)
_LAYOUT = _TABLES + (
    "CREATE TABLE state (key TEXT PRIMARY KEY, value ANY NOT NULL) STRICT;"
    "INSERT INTO state VALUES ('indexed_to', 0), ('touched_to', 0), ('generation', '');"
) + _VECTORS


def path_of(store: Path) -> Path:
    return Path(f"{store}{SUFFIX}")


def uri(path: Path, vfs: str | None, *, immutable: bool = False) -> str:
    """An ATTACH-able URI for `path` (through the store's VFS when it has one; `immutable`:
    the main file alone, read-only, for a file nothing writes)."""
    options = ([f"vfs={quote(vfs)}"] if vfs else []) + (["immutable=1"] if immutable else [])
    return f"file:{quote(str(path))}" + (f"?{'&'.join(options)}" if options else "")


def text_sql(row: str) -> str:
    """The SQL expression of a message row's indexed text (`row` is a table alias).

    The readable text is `content`, or the text parts of `parts` joined by newlines; a
    `tool` message contributes its first TOOL_TEXT_LIMIT characters (tool output can be
    megabytes, and what matters is at the top). The parts are walked with a recursive CTE
    and json_extract, the same expression migration 0002 froze.
    """
    def at(suffix: str = "") -> str:
        return f"'$[' || r.i || ']{suffix}'"

    parts = (
        f"(WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r "
        f"WHERE i + 1 < json_array_length({row}.parts)) "
        f"SELECT group_concat(CASE json_type({row}.parts, {at()}) "
        f"WHEN 'text' THEN json_extract({row}.parts, {at()}) "
        f"WHEN 'object' THEN iif(json_type({row}.parts, {at('.text')}) = 'text', "
        f"json_extract({row}.parts, {at('.text')}), NULL) END, char(10) ORDER BY r.i) FROM r)"
    )
    text = f"coalesce({row}.content, {parts}, '')"
    return f"(CASE WHEN {row}.role = 'tool' THEN substr({text}, 1, {TOOL_TEXT_LIMIT}) ELSE {text} END)"


def open_index(store: Path, *, patience: float, vfs: str | None, path: Path | None = None) -> apsw.Connection:
    """A writable connection to the index file (created with its layout when new), with the
    store attached as `store` for reading the messages it follows. `path` puts the index
    somewhere else (a check builds a second one from nothing to compare).

    The index holds every word of every message: it is made 0600 before SQLite creates
    it (its WAL and shm take its mode), and one planted by another account is refused."""
    path = path or path_of(store)
    try:
        claim_private(path, SIDECAR_SUFFIXES)
    except InvalidInput as exc:  # an index trouble like any other: searches say it, writes go on
        raise apsw.CantOpenError(str(exc)) from None
    make_private(path)  # an index made by an earlier release with the umask's mode
    conn = connect(path, patience=patience, vfs=vfs)
    try:
        conn.execute("PRAGMA journal_mode=WAL").fetchall()
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            with transaction(conn, "BEGIN IMMEDIATE"):
                if conn.execute("PRAGMA user_version").fetchone()[0] == 0:  # not made meanwhile
                    conn.execute(_LAYOUT)
                    conn.execute(f"PRAGMA user_version={VERSION}")
        elif version in _UPGRADED:
            _upgrade(conn)
        elif version != VERSION:
            raise apsw.CorruptError(f"search index file has layout {version}, expected {VERSION}")
        conn.execute("ATTACH ? AS store", (uri(store, vfs),))
    except BaseException:
        conn.close()
        raise
    return conn


#: The older layouts a file is brought from: it gains what it lacks; before layout 4 its
#: words are indexed again.
_UPGRADED = (2, 3, 4)


def _upgrade(conn: apsw.Connection) -> None:
    """An index of an older layout gains the indexes it lacks (stems, thoughts, vectors);
    one older than layout 4 is indexed again from the first message (a layout-2 file's
    words were indexed before NFC), by the catch-ups that follow, in batches."""
    with transaction(conn, "BEGIN IMMEDIATE"):
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version in _UPGRADED:  # not upgraded meanwhile
            if version < 4:
                conn.execute(_TABLES)
                for name in TOKENIZERS:
                    conn.execute(f"INSERT INTO {name}({name}) VALUES ('delete-all')")
                conn.execute("UPDATE state SET value = 0 WHERE key IN ('indexed_to', 'touched_to')")
            conn.execute(_VECTORS)
            conn.execute(f"PRAGMA user_version={VERSION}")


def remove(store: Path) -> None:
    """Delete the index's files (only when no process holds them: the caller checks)."""
    for suffix in FILES:
        Path(f"{store}{suffix}").unlink(missing_ok=True)
