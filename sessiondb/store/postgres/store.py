"""PostgresBackend: the backend primitives (store/backend.py) on one profile's schema.

A thin adapter: each primitive runs the SQL module that owns it as one unit of work
(connect.Database.run: one transaction, retried whole when the connection breaks), reads
in one REPEATABLE READ snapshot. Appends from concurrent callers of this process share
transactions (batching.py). Input arrives validated, as typed commands, from the neutral
layer (store/checked.py).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar

import psycopg

from ... import home as homes
from ...embedding import Embedder, EmbedderFailed
from ...errors import InvalidInput, StoreClosed
from ...model import (
    MaintenanceReport, Message, SearchHit, VerifyReport,
)
from .. import commands as cmd
from ..backend import Traces
from ..rows import Rows
from ..sql import ESCAPED_COLUMNS, Dialect, SQLRows, from_stored, to_server
from . import maintenance, messages, migrations, pooler, search, vectors, verify
from .batching import AppendBatcher
from .connect import DEFAULT_PATIENCE, DEFAULT_POOL_SIZE, EXTENSIONS_SCHEMA, Database, on_own_connection
from .replicas import Replicas

T = TypeVar("T")
#: durability -> the server's synchronous_commit: "normal" may lose the last commits of a
#: server crash (never of a client's), "full" loses none.
DURABILITY = {"full": "on", "normal": "off"}
_UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#: PostgreSQL's spelling of what store/sql.py writes once. A locked row is locked FOR NO
#: KEY UPDATE: no rule changes a key, so a turn or usage row inserted for a session need
#: not wait for an append holding it. A failed UPDATE aborts the transaction, so one that
#: may meet a unique column runs in a savepoint; message text is encoded for a server
#: that cannot hold a NUL (sql.py's to_server).
DIALECT = Dialect(
    name="postgresql", mark="%s", lock=" FOR NO KEY UPDATE", next_token="SELECT nextval('compaction_token')",
    inserted={"sessions": "created", "messages": "id", "turns": "seq"},
    duplicate=lambda exc: isinstance(exc, psycopg.errors.UniqueViolation),
    codecs={("messages", column): (to_server, from_stored) for column in ESCAPED_COLUMNS},
    update_needs_savepoint=True,
    # lower() is implied, and serves the index sessions_title_folded; translate() keeps the fold to ASCII.
    folded="lower({col}) = lower({value}) AND translate({col}, '" + _UPPER + "', '" + _UPPER.lower() + "') "
           "= translate({value}, '" + _UPPER + "', '" + _UPPER.lower() + "')",
)


class PostgresBackend:
    """One handle on one profile's store on a PostgreSQL server."""

    def __init__(self, url: str, *, profile: str | None = None, schema: str | None = None,
                 patience: float = DEFAULT_PATIENCE, pool_size: int = DEFAULT_POOL_SIZE,
                 durability: str = "full", replicas: Sequence[str] = (), embedder: Embedder | None = None) -> None:
        self._db = Database(url, schema=schema, profile=profile, patience=patience, pool_size=pool_size,
                            synchronous_commit=DURABILITY[durability])
        #: Streaming replicas that take searches, recalls and listings once they have replayed
        #: this handle's writes (replicas.py); None without any.
        self._replicas = Replicas(replicas, schema=self._db.schema, primary=self._db) if replicas else None
        self.location = f"{self._db.location}#{self._db.schema}"
        # Refused batches (damage only) are kept under the home, one folder per server and schema.
        self.spool_anchor = spool_anchor(self._db.location, self._db.schema)
        self._closed = threading.Event()
        if on_own_connection(self._db.conninfo, self._db.location, self._db.patience, self._migrate):
            self._db.use_pooler()
        self._db.open()
        if self._replicas is not None:
            self._replicas.open()
        self._appends = AppendBatcher(self._run, self._direct, lambda conn: SQLRows(conn, DIALECT), self._fresh)
        self._embedder = embedder
        if embedder is not None:
            self._run(vectors.enable)

    def _migrate(self, conn: psycopg.Connection) -> bool:
        """Bring the schema up to date; whether the server is reached through a pooler."""
        pooled = pooler.behind_pooler(conn, self._db.location)
        migrations.migrate(conn, self._db.schema, EXTENSIONS_SCHEMA, self._db.profile)
        return pooled

    @property
    def pool(self) -> Any:
        """The connection pool (psycopg_pool.ConnectionPool), for tools and tests."""
        return self._db.pool

    def pool_use(self) -> dict[str, int]:
        """The pool's connections serving a call (`used`), open and free (`idle`), and the
        calls waiting for one (`waiting`), for telemetry's gauges."""
        stats = self._db.pool.get_stats()
        idle = stats.get("pool_available", 0)
        return {"used": stats.get("pool_size", 0) - idle, "idle": idle, "waiting": stats.get("requests_waiting", 0)}

    @property
    def patience(self) -> float:
        """Seconds a unit of work is retried for while the server is away (see Backend)."""
        return self._db.patience

    @property
    def schema(self) -> str:
        return self._db.schema

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._db.close()
            if self._replicas is not None:
                self._replicas.close()

    def write(self, work: Callable[[Rows], T]) -> T:
        """`work` on the schema's rows in one transaction, re-run whole if the connection
        breaks (see Backend.write)."""
        return self._run(lambda conn: work(SQLRows(conn, DIALECT)))

    def read(self, work: Callable[[Rows], T]) -> T:
        """`work` on the schema's rows in one REPEATABLE READ snapshot (see Backend.read)."""
        return self._run(lambda conn: work(SQLRows(conn, DIALECT)), read_only=True)

    def read_nearby(self, work: Callable[[Rows], T]) -> T:
        """`read(work)`, on a replica that has replayed this handle's writes when the store
        has replicas (see backend.ReplicatedBackend)."""
        return self._read_nearby(lambda conn: work(SQLRows(conn, DIALECT)))

    def stream(self, work: Callable[[Rows], Iterator[T]]) -> Iterator[T]:
        """What `work` yields from the schema's rows, in one REPEATABLE READ snapshot; not
        re-run, since a caller may hold some of what it yielded (see Backend.stream)."""
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        yield from self._db.stream(lambda conn: work(SQLRows(conn, DIALECT)))

    def write_append(self, command: cmd.Append, work: Callable[[Rows], list[Message]]) -> list[Message]:
        """Concurrent appends share transactions, and a lone one of the common case is one
        statement (batching.py; see backend.AppendingBackend)."""
        return self._appends.append(command, work)

    def _run(self, work: Callable[[psycopg.Connection], T], *, read_only: bool = False) -> T:
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        try:
            return self._db.run(work, read_only=read_only)
        finally:
            if not read_only and self._replicas is not None:
                self._replicas.wrote()  # a failed write may have committed too

    def _direct(self, work: Callable[[psycopg.Connection], T]) -> T:
        """`work` on a connection outside any transaction: each statement commits itself."""
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        try:
            return self._db.session(work)
        finally:
            if self._replicas is not None:
                self._replicas.wrote()

    def _read(self, work: Callable[[psycopg.Connection], T]) -> T:
        return self._run(work, read_only=True)

    def _read_nearby(self, work: Callable[[psycopg.Connection], T]) -> T:
        """A read a replica may answer once it has replayed this handle's writes (replicas.py)."""
        if self._replicas is None:
            return self._read(work)
        if self._closed.is_set():
            raise StoreClosed("this store handle is closed; open the store again")
        return self._replicas.read(work)

    def _fresh(self, conn: psycopg.Connection, session_id: str, batch: Any, now: float) -> list[Message] | None:
        """The common append's one statement, its function named by schema; through a pooler
        it carries the durability its connection cannot keep (pooler.py)."""
        return messages.append_fresh(conn, session_id, batch, now, self._db.schema,
                                     self._db.synchronous_commit if self._db.pooled else None)

    # --- search, statistics, integrity --------------------------------------------

    def search(self, query: cmd.Search) -> list[SearchHit]:
        fields = {name: getattr(query, name) for name in query.__slots__}
        return self._read_nearby(partial(search.search, **fields))

    def recall(self, query: cmd.Search) -> list[SearchHit]:
        fields = {name: getattr(query, name) for name in query.__slots__
                  if name not in ("query", "include_reasoning")}  # a recall never reads reasoning
        question, why = query.query, None
        if question.meaning is not None and self._embedder is not None:
            try:
                why = vectors.catch_up(self._run, self._embedder)
            except EmbedderFailed as exc:
                why = str(exc)
        if why is not None or self._embedder is None:
            question = replace(question, meaning=None)
        hits = self._read_nearby(partial(search.recall, question=question, **fields))
        return hits if why is None else [replace(hit, note=why) for hit in hits]

    def rebuild_vectors(self) -> int:
        if self._embedder is None:
            return 0
        self._run(vectors.forget)
        why = vectors.catch_up(self._run, self._embedder)
        if why is not None:
            raise EmbedderFailed(why)
        return self._read(vectors.held)

    def scrub(self) -> Traces:
        """What the server keeps, said: the tables were vacuumed by release_space, and the
        server's files are not sessiondb's to scan."""
        return Traces(notes=[maintenance.SERVER_KEEPS])

    def release_space(self) -> int:
        """A plain VACUUM: the space of removed rows is the tables' to reuse (and empty pages at
        a table's end go back to the server's disk), with writers going on; VACUUM FULL, which
        would hand back the rest, locks each table for its rewrite and is left to the operator."""
        before = self.footprint()[0]
        self._db.session(partial(maintenance.run_each_table, schema=self._db.schema, statement="VACUUM"))
        return max(before - self.footprint()[0], 0)

    def footprint(self) -> tuple[int, int]:
        """The bytes of the schema's tables and sequences, and 0: the server's WAL is not
        this store's (see Backend)."""
        size = self._read(lambda conn: conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'S')").fetchone()[0])
        return int(size), 0

    def check(self, logical: Callable[[Rows, int, VerifyReport], None]) -> VerifyReport:
        return self._read(lambda conn: verify.verify(conn, SQLRows(conn, DIALECT), logical))


    # --- maintenance (maintenance.py): online on a server, never refused while held ------

    def backup(self, destination: Path) -> int:
        raise InvalidInput(maintenance.backup_refusal(self._db.schema, destination))

    def optimize(self, *, force: bool, dry_run: bool) -> MaintenanceReport:
        return self._maintain("optimize", dry_run, lambda: self._db.session(
            partial(maintenance.run_each_table, schema=self._db.schema, statement="ANALYZE")))

    def vacuum(self, *, force: bool, dry_run: bool) -> MaintenanceReport:
        return self._maintain("vacuum", dry_run, lambda: self._db.session(
            partial(maintenance.run_each_table, schema=self._db.schema, statement="VACUUM")))

    def _maintain(self, action: str, dry_run: bool, work: Callable[[], Any]) -> MaintenanceReport:
        """`work` unless it is a dry run, with the sizes before and after."""
        before = self.footprint()[0]
        if not dry_run:
            work()
        return MaintenanceReport(action, dry_run, before, self.footprint()[0])


def spool_anchor(location: str, schema: str) -> Path:
    """Where this host keeps the batches a store on a server refused (damage only): under
    the home, one name per server and schema."""
    keep = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in location.split("://", 1)[-1])
    return homes.resolve_home() / "postgres" / f"{keep[:80]}-{schema}"
