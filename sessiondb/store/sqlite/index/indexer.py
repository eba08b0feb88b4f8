"""The indexer: brings the search index up to date after the writes it follows.

One Indexer per open store file per process (beside its Writer). It never takes the
store's write lock: it reads the messages through its own connection (the store
attached, a read snapshot per batch) and writes only the index file, under that file's
own lock. Each batch is one transaction of the index file holding the content and the
marks that describe it (`state`), so a crash anywhere leaves the two agreeing.

Who runs it: a background thread woken after writes (`wanted`), which lingers a moment
so that one transaction indexes many messages (FTS5 writes a segment per transaction;
batching is what makes indexing cheap), and any search, which first catches the index
up to what the store held when the search began (`catch_up`), so a search finds every
acknowledged write, from whichever process wrote it. Two processes' indexers are kept
apart by the index file's lock; the marks make the loser's batch a no-op.

A failure here never reaches a writer: the background thread logs it and tries again at
the next write; a search sees it. Damage to the index file (S-16) is remembered until
the index is rebuilt (`rebuild`, run by optimize and the doctor's repair).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import apsw

from ....embedding import Embedder, EmbedderFailed, Space, other_space, vectors
from ....errors import Cause, classify
from ....query import indexable, indexable_runs
from ..connect import transaction
from ..safety.holders import holders
from . import schema

log = logging.getLogger(__name__)

BATCH = 2000  # messages (and logged ids) per index transaction
EMBED_BATCH = 1000  # messages (and logged ids) per transaction of the vectors
LINGER = 0.05  # seconds the background thread waits after a write wakes it, to gather a batch

Marks = tuple[int, int]  # (highest message id, highest search_touched seq)

_STORE_MARKS = (
    "SELECT (SELECT coalesce(max(id), 0) FROM {db}messages), "
    "(SELECT coalesce(max(seq), 0) FROM {db}search_touched)"
)
STORE_MARKS = _STORE_MARKS.format(db="")  # read on a store connection
# The highest message id the store ever held and the highest seq its log ever gave out
# (the log's swept rows included): an index past either follows commits the store lost.
_STORE_EVER = (
    "SELECT max((SELECT coalesce(max(id), 0) FROM store.messages), (SELECT id FROM store.search_freed)), "
    "coalesce((SELECT seq FROM store.sqlite_sequence WHERE name = 'search_touched'), 0)"
)
_INDEX_MARKS = "SELECT (SELECT value FROM {db}state WHERE key = 'indexed_to'), " \
               "(SELECT value FROM {db}state WHERE key = 'touched_to')"
INDEX_MARKS = _INDEX_MARKS.format(db="idx.")  # read on a store connection with the index attached
_EMBEDDED_MARKS = "SELECT (SELECT value FROM {db}state WHERE key = 'embedded_to'), " \
                  "(SELECT value FROM {db}state WHERE key = 'embedded_touched_to'), " \
                  "(SELECT value FROM {db}state WHERE key = 'space')"
EMBEDDED_MARKS = _EMBEDDED_MARKS.format(db="idx.")


class OtherSpace(Exception):
    """The index's vectors were computed by another embedder than the store's."""

    def __init__(self, stored: str, wanted: str) -> None:
        super().__init__(other_space(stored, wanted))


class Indexer:
    """The index file of one store, and the thread that keeps it caught up."""

    def __init__(self, store: Path, *, patience: float, vfs: str | None, embedder: Embedder | None = None) -> None:
        self.store = store
        self.vfs = vfs
        self.embedder = embedder
        #: Why the vectors are not caught up (an embedder that failed, another's vectors),
        #: as a sentence recall passes on; None while they are.
        self.vectors_trouble: str | None = None
        self._patience = patience
        self._lock = threading.Lock()  # one batch at a time in this process
        self.wanted = threading.Event()
        self._stopping = threading.Event()
        self._conn: apsw.Connection | None = None
        self.generation = 0  # counts files made: a reader attached to an older one re-attaches
        self.damage: BaseException | None = None  # index damage seen; cleared by a rebuild
        #: When a batch last left the index covering what the store held as it began
        #: (time.monotonic()): how long the index has been behind, while it is.
        self.caught_up_at = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name=f"sessiondb-indexer:{store}", daemon=True)
        self._thread.start()

    # --- for the writer's side ----------------------------------------------------------
    # After a write, the store sets `wanted` (messages may have been written: index them
    # soon); it never waits on it, and leaves it alone while it is set (a batch is gathering).

    def settle(self) -> None:
        """Catch up before the store closes, so that the index's file covers the store's
        (a store on a full disk is read from its files as they are); a failure is only
        logged: the next search catches up."""
        try:
            self.catch_up()
        except apsw.Error as exc:
            log.warning("search index of %s not brought up to date at close: %s", self.store, exc)

    def stop(self) -> None:
        self._stopping.set()
        self.wanted.set()
        self._thread.join()
        with self._lock:
            self._close()

    # --- for searches and maintenance ---------------------------------------------------

    def catch_up(self, target: Marks | None = None, *, vectors: bool = False) -> None:
        """Index until the index covers `target` (the store's marks when a search began;
        None: everything the store holds now). Raises what stops it. With `vectors` (a
        recall's catch-up, and the thread's), the vectors are caught up too, as far as
        the embedder lets them: its trouble is kept in `vectors_trouble`, never raised."""
        with self._lock:
            failure = self.damage  # seen before: healed now if nobody else holds the store
            if failure is None:
                try:
                    self._run(target)
                    if vectors and self.embedder is not None:
                        self._embed()
                    return
                except apsw.Error as exc:
                    failure = exc
        if not self.heal(failure):
            raise failure

    def heal(self, exc: BaseException) -> bool:
        """`exc` may be damage to the index file: if so, and no other process holds the
        store, rebuild the index now (S-16) and return True; otherwise remember it."""
        if classify(exc) not in (Cause.CORRUPT, Cause.FTS_INDEX):
            return False
        self.damage = exc
        if holders(self.store):
            return False
        self.rebuild()
        return True

    def rebuild(self) -> None:
        """Delete the index file and build it again from the messages (the caller has made
        sure no other process holds the store)."""
        with self._lock:
            self._close()
            schema.remove(self.store)
            self.generation += 1
            self.damage = None
            self._run(None)
            if self.embedder is not None:
                self._embed()

    def forget_vectors(self) -> None:
        """Drop every vector, whoever computed them, so that this store's embedder computes
        them again from the messages (in the catch-ups that follow)."""
        with self._lock:
            _forgotten(self._connection())
            self.vectors_trouble = None

    def optimize(self) -> int:
        """Catch up and merge the index's segments into one per index (after damage: rebuild
        it from nothing); returns the store log's seq the index has applied."""
        if self.damage is not None:
            self.rebuild()
        with self._lock:
            self._run(None)
            conn = self._connection()
            for name in schema.TOKENIZERS:
                conn.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")
            if self.embedder is not None:
                self._embed()
            swept_to = _index_marks(conn)[1]
            _, embedded_touched_to, space = _embedded_marks(conn)
            if space and embedded_touched_to < swept_to:
                # Vectors behind the log (an embedder failing, or the store opened without
                # one) would miss the changes swept away: they go, and are computed again
                # by the next embedder.
                _forgotten(conn)
            return swept_to

    def purge(self) -> None:
        """Leave nothing of deleted messages in the index's files (a forget, S-55): catch
        up (their words get delete marks, which are not yet gone from the segments), drop
        their vectors whoever computed them, merge every index (the marks and what they
        hide go), rewrite the file (pages freed earlier may hold old segments) and reset
        its WAL."""
        with self._lock:
            self._run(None)
            conn = self._connection()
            with conn:
                conn.execute("DELETE FROM vectors WHERE rowid NOT IN (SELECT id FROM store.messages)")
                for name in schema.TOKENIZERS:
                    conn.execute(f"INSERT INTO {name}({name}) VALUES ('optimize')")
            conn.execute("VACUUM main")
            conn.execute("PRAGMA main.wal_checkpoint(TRUNCATE)")

    def vectors_held(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT count(*) FROM vectors").fetchone()[0]

    def marks(self) -> Marks:
        with self._lock:
            return _index_marks(self._connection())

    def close_without_checkpoint(self) -> None:
        """The store was found damaged: this connection (which has it attached) must not
        checkpoint the store's WAL into its main file when it closes."""
        with self._lock:
            if self._conn is not None:
                self._conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)

    # --- running batches (with self._lock held) -----------------------------------------

    def _connection(self) -> apsw.Connection:
        if self._conn is None:
            conn = schema.open_index(self.store, patience=self._patience, vfs=self.vfs)
            try:
                _adopt(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                conn.close()
            except apsw.Error as exc:
                # Closing checkpoints the index's WAL; if that fails the WAL stays and is
                # recovered at the next open. The index never fails a store's close.
                log.warning("search index of %s closed with an error: %s", self.store, exc)

    def _run(self, target: Marks | None) -> None:
        try:
            conn = self._connection()
            if target is None:
                target = conn.execute(_STORE_MARKS.format(db="store.")).fetchone()
            # A batch that finds less than a full batch to do has covered its own snapshot of
            # the store, which is newer than the target (the target's last row may since
            # have been deleted, so the marks alone cannot say when to stop).
            if _behind(_index_marks(conn), target):
                while not index_batch(conn, BATCH):
                    pass
            self.caught_up_at = time.monotonic()
        except apsw.Error:
            self._close()  # a fresh connection next time, whatever went wrong
            raise

    def _embed(self) -> None:
        """Catch the vectors up with the store; the embedder's trouble is remembered, not raised."""
        assert self.embedder is not None
        conn = self._connection()
        try:
            while not embed_batch(conn, self.embedder, EMBED_BATCH):
                pass
        except (OtherSpace, EmbedderFailed) as exc:
            self.vectors_trouble = str(exc)
            return
        self.vectors_trouble = None

    def _serve(self) -> None:
        while True:
            self.wanted.wait()
            self.wanted.clear()
            # Let a batch gather (one transaction for many messages); a stop ends the wait.
            if self._stopping.wait(LINGER):
                return
            try:
                self.catch_up(vectors=True)
            except Exception as exc:  # noqa: BLE001 - a writer never sees the index's trouble
                log.warning("search index of %s not brought up to date: %s", self.store, exc)


def _behind(index: Marks, target: Sequence[int]) -> bool:
    return index[0] < target[0] or index[1] < target[1]


def _index_marks(conn: apsw.Connection) -> Marks:
    return conn.execute(_INDEX_MARKS.format(db="")).fetchone()


def _embedded_marks(conn: apsw.Connection) -> tuple[int, int, str]:
    return conn.execute(_EMBEDDED_MARKS.format(db="")).fetchone()


@contextmanager
def _writing(conn: apsw.Connection) -> Iterator[None]:
    """A write transaction of the index file alone. BEGIN IMMEDIATE would take the write
    lock of every attached database, the store's included (the writer's lock); a first
    statement that writes only the index takes only the index's."""
    with transaction(conn):
        conn.execute("UPDATE main.state SET value = value WHERE key = 'generation'")
        yield


def _adopt(conn: apsw.Connection) -> None:
    """Make sure the index describes this store: one built for another file (a different
    generation stamp), or for a later state of it, starts over. A later state is one the
    store lost (a power cut at durability normal): the index has applied logged changes or
    indexed ids the store never gave out as far as it now knows, and those ids will be
    given out again without a log entry."""
    with _writing(conn):
        (generation,) = conn.execute("SELECT value FROM state WHERE key = 'generation'").fetchone()
        (ours,) = conn.execute("SELECT generation FROM store.store_identity").fetchone()
        (highest, logged), (indexed_to, touched_to) = conn.execute(_STORE_EVER).fetchone(), _index_marks(conn)
        embedded_to, embedded_touched_to, _ = _embedded_marks(conn)
        if generation != ours or highest < max(indexed_to, embedded_to) or logged < max(touched_to,
                                                                                         embedded_touched_to):
            _reset(conn)
            conn.execute("UPDATE state SET value = ? WHERE key = 'generation'", (ours,))


def _reset(conn: apsw.Connection) -> None:
    for name in schema.TOKENIZERS:
        conn.execute(f"INSERT INTO {name}({name}) VALUES ('delete-all')")
    conn.execute("UPDATE state SET value = 0 WHERE key IN ('indexed_to', 'touched_to')")
    _forget_vectors(conn)


def _forget_vectors(conn: apsw.Connection) -> None:
    conn.execute("DELETE FROM vectors")
    conn.execute("UPDATE state SET value = iif(key = 'space', '', 0) "
                 "WHERE key IN ('embedded_to', 'embedded_touched_to', 'space')")


def _forgotten(conn: apsw.Connection) -> None:
    """Every vector dropped, in a transaction of the index file of its own."""
    with _writing(conn):
        _forget_vectors(conn)


def _logged(conn: apsw.Connection, after: int, limit: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Up to `limit` entries (seq, id) of the store's log of deleted and changed ids past
    seq `after`, and the ids they name, sorted."""
    touched = conn.execute("SELECT seq, id FROM store.search_touched WHERE seq > ? ORDER BY seq LIMIT ?",
                           (after, limit)).fetchall()
    return touched, sorted({mid for _, mid in touched})


def _rows_at(conn: apsw.Connection, columns: str, ids: list[int]) -> Iterator[tuple]:
    """`columns` (of the message `m`) of the messages at `ids` that exist, read as they are
    used, 500 ids to a statement."""
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        yield from conn.cursor().execute(
            f"SELECT {columns} FROM store.messages AS m WHERE m.id IN ({', '.join('?' * len(chunk))})", chunk)


def _rows_after(conn: apsw.Connection, columns: str, after: int, limit: int) -> apsw.Cursor:
    """`columns` (of the message `m`) of the first `limit` messages past id `after`."""
    return conn.cursor().execute(f"SELECT {columns} FROM store.messages AS m WHERE m.id > ? ORDER BY m.id LIMIT ?",
                                 (after, limit))


def embed_batch(conn: apsw.Connection, embedder: Embedder, limit: int) -> bool:
    """Bring the vectors up to `limit` logged ids and `limit` new messages nearer the store,
    as index_batch brings the words (the same marks' rules, marks of their own); True when
    that was everything. The texts are read in one snapshot and embedded outside any
    transaction (an embedder may take seconds, and the index file's lock is every
    process's); the vectors are written only if no other process moved the marks
    meanwhile (else this batch is read again). OtherSpace if the vectors there are another
    embedder's."""
    space = Space.of(embedder).key
    text = schema.text_sql("m")
    with transaction(conn):  # one snapshot of the index and the store
        marks = _embedded_marks(conn)
        embedded_to, touched_to, stored = marks
        if stored not in ("", space):
            raise OtherSpace(stored, space)
        touched, gone = _logged(conn, touched_to, limit)
        rows = list(_rows_at(conn, f"m.id, {text}", [mid for mid in gone if mid <= embedded_to]))
        new = _rows_after(conn, f"m.id, {text}", embedded_to, limit).fetchall()
    texts = [(mid, indexable(said)) for mid, said in rows + new if said and not said.isspace()]
    made = vectors(embedder, [said for _, said in texts])
    with _writing(conn):
        if _embedded_marks(conn) != marks:
            conn.execute("ROLLBACK")  # another process's batch came first: read what is left
            return False
        conn.executemany("DELETE FROM vectors WHERE rowid = ?", [(mid,) for mid in gone])
        conn.executemany("INSERT OR REPLACE INTO vectors(rowid, vector) VALUES (?, ?)",
                         [(mid, vector) for (mid, _), vector in zip(texts, made)])
        conn.executemany("UPDATE state SET value = ? WHERE key = ?",
                         [(new[-1][0] if new else embedded_to, "embedded_to"),
                          (touched[-1][0] if touched else touched_to, "embedded_touched_to"), (space, "space")])
    return len(touched) < limit and len(new) < limit


def index_batch(conn: apsw.Connection, limit: int) -> bool:
    """One transaction of the index file: apply up to `limit` logged ids, index up to
    `limit` new messages, and move the marks with them. True when that was everything.

    The marks only rise. Every id up to `indexed_to` was indexed as its row was then, and
    any later change to a row at such an id is in the store's log: a delete or a change of
    text by the triggers, and an insert that takes a freed id too (migration 0006); an
    insert the log does not hold is above every id the store ever held, so above the mark,
    and the scan of new ids finds it. Nothing above the mark is in the index."""
    text = schema.text_sql("m")
    with _writing(conn):
        indexed_to, touched_to = _index_marks(conn)
        touched, ids = _logged(conn, touched_to, limit)
        if touched:
            # Logged rows leave the index; those that exist now (an id reused, a text
            # changed) are indexed again as they are. Ids above indexed_to come below.
            for name in schema.TOKENIZERS:
                conn.executemany(f"DELETE FROM {name} WHERE rowid = ?", [(mid,) for mid in ids])
            _add(conn, _rows_at(conn, f"m.id, {text}, m.reasoning", [mid for mid in ids if mid <= indexed_to]))
            touched_to = touched[-1][0]
        added, last = _add(conn, _rows_after(conn, f"m.id, {text}, m.reasoning", indexed_to, limit))
        conn.executemany("UPDATE state SET value = ? WHERE key = ?",
                         [(max(indexed_to, last), "indexed_to"), (touched_to, "touched_to")])
    return len(touched) < limit and added < limit


def _add(conn: apsw.Connection, rows: Iterable[tuple[int, str, str | None]]) -> tuple[int, int]:
    """Index rows (id, text, reasoning) as they are read (a batch of long texts is never all
    in memory); returns how many and the last id. One prepared statement per index for the
    whole batch."""
    count = last = 0
    cjk: list[tuple[int, str]] = []
    thoughts: list[tuple[int, str]] = []

    def words() -> Iterable[dict[str, object]]:
        nonlocal count, last
        for mid, text, reasoning in rows:
            if reasoning:
                thoughts.append((mid, indexable(reasoning)))
            text, runs = indexable_runs(text)
            if runs:
                # Only the runs of CJK text: the word index serves the rest, and trigrams of
                # the whole text would be most of the index's bytes.
                cjk.append((mid, "\n".join(runs)))
            count, last = count + 1, mid
            yield {"id": mid, "text": text}

    # Both word indexes from one pass over the rows, each text read and prepared once.
    conn.executemany(f"INSERT INTO {schema.WORDS}(rowid, text) VALUES (:id, :text); "
                     f"INSERT INTO {schema.STEMS}(rowid, text) VALUES (:id, :text)", words())
    if cjk:
        conn.executemany(f"INSERT INTO {schema.CJK}(rowid, text) VALUES (?, ?)", cjk)
    if thoughts:
        conn.executemany(f"INSERT INTO {schema.THOUGHTS}(rowid, text) VALUES (?, ?)", thoughts)
    return count, last
