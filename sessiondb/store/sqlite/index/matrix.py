"""An SQLite store's vectors of meaning held in memory, for a recall's nearest messages.

The vectors live in the index file's `vectors` table. Scanning that table row by row costs
about 200 ms for 200,000 vectors of 256 numbers, and sqlite-vec's own tables 150 ms
(docs/benchmarks-recall.md). Here each vector is held as 8-bit integers (its unit numbers
times SCALE: 256 bytes a message at 256 dimensions) in one matrix per store file in this
process, and one product of the matrix with the question finds the CANDIDATES nearest in
about 20 ms at that size. The recall then reads those candidates' vectors from the table,
keeps the ones its filters keep, and ranks them by the exact float32 product.

The product is begun before a recall looks for its words and read after (`candidates`):
numpy lets go of the interpreter while it multiplies, as SQLite does while it steps, so
on two cores the two legs of a hybrid recall take the time of the longer one, not their
sum (docs/benchmarks-recall.md).

The matrix follows the table. At each recall it reads the rows above the last id it
holds: new vectors only ever arrive at higher ids. It is read again whole when its key
changes: the index file's generation, the vectors' log mark (a delete or a changed text
re-embeds a lower id) or their embedder. numpy, an extra (`sessiondb[vectors]`), does the
product; it is imported only by a store opened with an embedder.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from importlib import import_module
from typing import Any, Callable

import apsw

from ....errors import InvalidInput

CANDIDATES = 1000  # vectors the product hands on to be scored exactly
SCALE = 127  # a unit vector's numbers (-1 to 1) as 8-bit integers


def numpy() -> Any:
    try:
        return import_module("numpy")
    except ImportError:
        raise InvalidInput("an embedder on an SQLite store needs numpy: pip install 'sessiondb[vectors]'") from None


class Matrix:
    """The vectors of one store file, as int8 rows, with their ids in the same order."""

    def __init__(self) -> None:
        self._np = numpy()
        self._lock = threading.Lock()
        self._key: tuple | None = None
        self._ids = self._np.empty(0, self._np.int64)
        self._rows = self._np.empty((0, 0), self._np.int8)
        self._held = 0  # rows in use; the arrays have room for more

    def candidates(self, conn: apsw.Connection, meaning: bytes, key: tuple) -> Callable[[], list[int]]:
        """What gives the ids of the CANDIDATES vectors nearest `meaning` (all of them, when
        fewer): the matrix is brought up to the table as `conn`'s transaction sees it here,
        and the product begun on another thread; calling what this returns waits for it."""
        np = self._np
        question = np.frombuffer(meaning, np.float32)
        with self._lock:
            if key != self._key:
                self._key, self._held = key, 0
                self._ids, self._rows = np.empty(0, np.int64), np.empty((0, len(question)), np.int8)
            self._follow(conn, len(question))
            # Views of the rows held now: a later follow writes past them or into new arrays.
            ids, rows = self._ids[:self._held], self._rows[:self._held]
        if len(ids) <= CANDIDATES:
            return ids.tolist

        def nearest() -> list[int]:
            scores = np.einsum("ij,j->i", rows, np.rint(question * SCALE).astype(np.int32))
            return ids[np.argpartition(-scores, CANDIDATES)[:CANDIDATES]].tolist()

        return _products().submit(nearest).result

    def _follow(self, conn: apsw.Connection, dimensions: int) -> None:
        np = self._np
        last = int(self._ids[self._held - 1]) if self._held else 0
        new = conn.execute("SELECT rowid, vector FROM idx.vectors WHERE rowid > ? ORDER BY rowid", (last,)).fetchall()
        if not new:
            return
        needed = self._held + len(new)
        if needed > len(self._ids):  # room for twice as many: rows arrive a few at a time
            room = max(needed, 2 * len(self._ids), 1024)
            ids, rows = np.empty(room, np.int64), np.empty((room, dimensions), np.int8)
            ids[:self._held], rows[:self._held] = self._ids[:self._held], self._rows[:self._held]
            self._ids, self._rows = ids, rows
        self._ids[self._held:needed] = [row[0] for row in new]
        floats = np.frombuffer(b"".join(row[1] for row in new), np.float32).reshape(len(new), dimensions)
        self._rows[self._held:needed] = np.rint(floats * SCALE).astype(np.int8)
        self._held = needed


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _products() -> ThreadPoolExecutor:
    """The threads the products run on (made at the first, shared by every matrix)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="sessiondb-vectors")
        return _pool


def _forget_after_fork() -> None:
    """A forked child has none of its parent's threads: a pool carried over would take work
    and never run it, so the child makes its own at its first product."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def scored(conn: apsw.Connection, meaning: bytes, sql: str, params: list[Any]) -> list[tuple[int, float, float]]:
    """(id, similarity, time) of the rows `sql` reads (id, vector, time), by the exact
    float32 product of each vector with `meaning`."""
    np = numpy()
    rows = conn.execute(sql, params).fetchall()
    if not rows:
        return []
    vectors = np.frombuffer(b"".join(row[1] for row in rows), np.float32).reshape(len(rows), -1)
    similarities = vectors @ np.frombuffer(meaning, np.float32)
    return [(row[0], float(similarity), row[2]) for row, similarity in zip(rows, similarities)]
