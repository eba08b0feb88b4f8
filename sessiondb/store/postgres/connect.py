"""Connections to one profile's schema: the pool, the schema's name, and units of work.

A unit of work is a function of one connection run inside one transaction. When the
connection breaks under it (killed while idle by a firewall or pgbouncer, the server
restarting or failing over), the whole unit runs again on a fresh connection, with
backoff, until the patience budget is spent; every write is idempotent (appends and
imports by uid), so running one again never stores anything twice. Bad input and
conflicts are not retried.

A URL may name several servers, as libpq's does (`postgresql://h1:p1,h2:p2/db`): the
primary of a failover formation and its standbys. Such a URL asks for the writable one
(`target_session_attrs=read-write`, unless it says otherwise), so a fresh connection
follows the primary wherever it went; a connection that meets a read-only server in a unit
of work (SQLSTATE 25006) is dropped and the unit retried like a broken one, and nothing is
ever written to a standby. A formation with no primary within the patience is `Unavailable`.

Retrying is sessiondb's, not the pool's: the pool stops trying to reconnect after a
second (its own backoff doubles to half a minute, which outlasts the patience), and a
request waits on the pool a second at a time, so the next one asks the pool to connect
again; a server back within the budget is found within about a second. A write the
server's absence stopped is `Unavailable` (an attempt may have committed before its
connection broke: retrying stores it once); a read is `ServerUnreachable`. Only a pool
whose every connection stays busy, with the server reachable, is StoreBusy.

Each profile's store is a schema of its own (docs/fleet.md says why); every connection
of the pool has the schema, then the schema holding the search extensions, on its
search_path, so the SQL modules name tables without qualifying them.
"""

from __future__ import annotations

import hashlib
import random
import re
import socket
import time
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from ... import telemetry
from ...errors import InvalidInput, ServerUnreachable, SessionDBError, StoreBusy
from . import pooler
from .errors import connection_lost, convert, refused_write, retryable, unavailable

T = TypeVar("T")

DEFAULT_PATIENCE = 30.0  # seconds a call may spend waiting for the server or the pool
DEFAULT_POOL_SIZE = 10
EXTENSIONS_SCHEMA = "sessiondb_extensions"  # unaccent and pg_trgm, shared by every profile's schema
_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_HASHED = re.compile(r".*_[0-9a-f]{10}")  # how a schema_for name that had to be hashed ends
_BACKOFF = (0.05, 1.0)  # first and longest pause between attempts
_WAIT = _BACKOFF[1]  # longest a request waits on the pool, and how long the pool tries to reconnect


def schema_for(profile: str | None) -> str:
    """The schema of a profile: `sessiondb` for the default, `sessiondb_<name>` otherwise.

    Profile names may hold '-' and run to 64 characters; PostgreSQL names run to 63 bytes,
    so a name that would not fit keeps its start and gains a hash of the whole. Two names
    never share a schema: a name spelled like such a hash's ending (an underscore and 10
    hex digits), which could open another profile's schema, is refused, and so is
    `extensions`, whose schema holds the extensions every profile shares.
    """
    if profile is None or profile == "main":
        return "sessiondb"
    if "sessiondb_" + profile == EXTENSIONS_SCHEMA:
        raise InvalidInput(f"profile name {profile!r} is reserved on a PostgreSQL server (its schema holds the "
                           "extensions every profile shares); choose another name")
    if _HASHED.fullmatch(profile):
        raise InvalidInput(f"profile name {profile!r} ends like the schema of another profile's longer or "
                           "hyphenated name (an underscore and 10 hex digits), so on a PostgreSQL server it could "
                           "open that profile's store; choose another name")
    name = "sessiondb_" + profile.replace("-", "_")
    if len(name) > 63 or name != "sessiondb_" + profile:
        digest = hashlib.sha256(profile.encode()).hexdigest()[:10]
        name = f"{name[:50]}_{digest}"
    return name


def application_name(conninfo: str, schema: str) -> dict[str, str]:
    """The connection parameter naming sessiondb and the schema to the server (seen in
    `pg_stat_activity`, and how a profile's deletion tells it is in use), unless the URL
    names an application of its own."""
    if "application_name" in conninfo_to_dict(conninfo):
        return {}
    return {"application_name": client_name(schema)}


def client_name(schema: str) -> str:
    """`application_name` of sessiondb's connections to `schema`, as the server keeps it
    (63 bytes at most)."""
    return f"sessiondb:{schema}"[:63]


def check_schema(schema: str) -> str:
    if not isinstance(schema, str) or not _SCHEMA.fullmatch(schema):
        raise InvalidInput(f"a schema name is 1-63 lower-case letters, digits or '_' (got {schema!r})")
    if schema == EXTENSIONS_SCHEMA:
        raise InvalidInput(f"schema {schema!r} holds the extensions every profile shares; choose another schema")
    return schema


def split_url(url: str) -> tuple[str, str, str | None]:
    """(the conninfo to connect with, the location to show: no password, the `schema`
    query parameter if given). `schema` is sessiondb's, so libpq never sees it. A URL
    naming several servers asks for the writable one unless it says which it wants."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    query = [(k, v) for k, v in query if k != "schema"]
    given = conninfo_to_dict(urlunsplit(("postgresql", parts.netloc, parts.path,
                                         urlencode(query, quote_via=quote), "")))
    if "," in given.get("host", given.get("hostaddr", "")) and "target_session_attrs" not in given:
        query.append(("target_session_attrs", "read-write"))
    host = parts.netloc.rpartition("@")[2]
    shown_netloc = f"{parts.username}@{host}" if parts.username else host
    # %20, never '+', for a space: libpq reads a URL's query without turning '+' into one.
    shown_query = urlencode([(k, v) for k, v in query if k != "password"], quote_via=quote)
    shown = urlunsplit(("postgresql", shown_netloc, parts.path, shown_query, ""))
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(query, quote_via=quote), "")), shown, schema


class Database:
    """One pool on one server, serving one schema."""

    def __init__(self, url: str, *, schema: str | None, profile: str | None, patience: float, pool_size: int,
                 synchronous_commit: str) -> None:
        if not (isinstance(pool_size, int) and not isinstance(pool_size, bool) and pool_size >= 1):
            raise InvalidInput("pool_size must be a positive number of connections")
        self.conninfo, self.location, in_url = split_url(url)
        self.schema = check_schema(schema or in_url or schema_for(profile))
        #: The profile this schema serves (None for a schema named for itself), which
        #: migration 0010 records so the server's profiles can be listed by name.
        named = profile or "main"
        self.profile = named if schema_for(named) == self.schema else None
        self.patience = float(patience)
        #: The URL asks for the writable server: a read-only one met in a unit of work is a
        #: primary that moved (failed over, fenced), which a fresh connection may find.
        self.follows_primary = conninfo_to_dict(self.conninfo).get("target_session_attrs") in ("read-write", "primary")
        self.synchronous_commit = synchronous_commit
        # No connection is made ahead of the first request (min_size=0). With one made at
        # open, the first request came while it was still connecting, so the pool grew a
        # second; a lone caller then alternated between the two for good (the pool hands
        # them out first in, first out), each cold in the other's turn: about an eighth more
        # of the server's CPU per append with 8 writer processes (docs/fleet.md).
        self.pool = ConnectionPool(
            self.conninfo, min_size=0, max_size=pool_size, open=False, configure=self._configure,
            kwargs={"autocommit": True, "connect_timeout": max(1, int(min(self.patience, 10)) or 1),
                    **application_name(self.conninfo, self.schema)},
            reconnect_timeout=_WAIT, reconnect_failed=self._lost, name=f"sessiondb:{self.schema}",
        )
        #: The pool's last attempt to connect failed: a request that times out on the pool
        #: meanwhile waited on an absent server, not on busy connections.
        self.away = False
        #: Connections reach the server through a pooler (pooler.py): nothing is kept on them.
        self.pooled = False
        #: Where the pool's last new connection reached the server: a new one elsewhere is a failover.
        self.address: tuple[str, int] | None = None

    def use_pooler(self) -> None:
        """Keep nothing on a connection between transactions (before open: pooler.py)."""
        self.pooled = True
        self.pool.kwargs["prepare_threshold"] = None  # no statement prepared on a server connection

    def _configure(self, conn: psycopg.Connection) -> None:
        self.away = False
        address, self.address = self.address, (conn.info.host, conn.info.port)
        if address not in (None, self.address):
            telemetry.failed_over("postgresql")
        if self.pooled:
            return  # each transaction sets its own (pooler.pin)
        conn.execute(sql.SQL("SET search_path TO {}, {}").format(
            sql.Identifier(self.schema), sql.Identifier(EXTENSIONS_SCHEMA)))
        conn.execute("SELECT set_config('synchronous_commit', %s, false)", (self.synchronous_commit,))

    def _pin(self, conn: psycopg.Connection) -> None:
        """Through a pooler, the transaction's own search_path and synchronous_commit."""
        if self.pooled:
            pooler.pin(conn, pooler.search_path(self.schema, EXTENSIONS_SCHEMA), self.synchronous_commit)

    def _lost(self, pool: ConnectionPool) -> None:
        self.away = True

    def open(self) -> None:
        self.pool.open(wait=False)

    def close(self) -> None:
        self.pool.close()

    def run(self, work: Callable[[psycopg.Connection], T], *, read_only: bool = False) -> T:
        """`work(conn)` in one transaction, retried whole on a broken connection (see above)."""
        return self._retried(lambda wait: self._attempt(work, wait, read_only), writes=not read_only)

    def session(self, work: Callable[[psycopg.Connection], T]) -> T:
        """`work(conn)` on a pooled connection without a transaction around it (a lone
        append's statement, VACUUM), retried like `run`. Through a pooler (`pooled`) the
        connection has no search_path or synchronous_commit of its own: `work` names the
        schema and sets what it needs within its statements."""
        def attempt(wait: float) -> T:
            with self._connection(wait) as conn:
                return work(conn)
        return self._retried(attempt, writes=True)

    def _retried(self, attempt: Callable[[float], T], *, writes: bool) -> T:
        deadline = time.monotonic() + self.patience
        pause = _BACKOFF[0]
        maybe_stored = False  # an attempt's connection broke: it may have committed first
        while True:
            left = deadline - time.monotonic()
            try:
                return attempt(min(max(left, 0.001), _WAIT))
            except SessionDBError:
                raise
            except Exception as exc:  # a driver error: convert it, or try again
                maybe_stored = maybe_stored or (writes and connection_lost(exc))
                left = deadline - time.monotonic()
                waited = isinstance(exc, PoolTimeout)  # on the pool, for as long as it may
                moved = self.follows_primary and refused_write(exc)
                if not (waited or moved or retryable(exc)) or left <= 0:
                    raise self._gave_up(exc, writes, maybe_stored) from None
                telemetry.retried("postgresql", exc)
                if not waited:
                    time.sleep(min(pause * (0.5 + random.random()), left))
                    pause = min(pause * 2, _BACKOFF[1])

    def _gave_up(self, exc: BaseException, writes: bool, maybe_stored: bool) -> BaseException:
        """The error once retrying is over: a write the server's absence stopped (or whose
        connection broke) may or may not be stored."""
        error = _exhausted(exc, self.conninfo, self.location, away=self.away)
        no_primary = isinstance(error, ServerUnreachable) or self.follows_primary and refused_write(exc)
        if writes and (no_primary or maybe_stored and isinstance(error, StoreBusy)):
            return unavailable(error, f"{self.location}#{self.schema}")
        return error

    def _attempt(self, work: Callable[[psycopg.Connection], T], wait: float, read_only: bool) -> T:
        with self._connection(wait) as conn:
            # A read runs in one REPEATABLE READ snapshot: its queries agree with each other.
            isolation = psycopg.IsolationLevel.REPEATABLE_READ if read_only else None
            conn.isolation_level = isolation
            conn.read_only = read_only or None
            with conn.transaction():
                self._pin(conn)
                return work(conn)

    @contextmanager
    def _connection(self, wait: float) -> Iterator[psycopg.Connection]:
        """A pooled connection; one that failed under its work is replaced before the retry."""
        with self.pool.connection(timeout=wait) as conn:
            try:
                yield conn
            except psycopg.Error as exc:
                if refused_write(exc):
                    conn.close()  # the pool replaces a closed connection: the next one finds the primary
                if conn.broken or conn.closed:
                    self.pool.check()  # let the pool replace the connections a restart killed
                raise

    def stream(self, work: Callable[[psycopg.Connection], Iterator[T]]) -> Iterator[T]:
        """The items `work(conn)` yields, read in one REPEATABLE READ snapshot. Not retried:
        a caller that already holds some items cannot be handed them twice."""
        try:
            with self.pool.connection(timeout=max(self.patience, 0.001)) as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
                with conn.transaction():
                    self._pin(conn)
                    yield from work(conn)
        except SessionDBError:
            raise
        except Exception as exc:
            raise _exhausted(exc, self.conninfo, self.location) from None


def _exhausted(exc: BaseException, conninfo: str, location: str, *, away: bool = False) -> BaseException:
    """The error to raise once retrying is over. A pool that timed out may have waited on
    a server it cannot reach (or that refuses us): one direct attempt tells which, and a
    server that came back only as the budget ran out (`away`) was still unreachable."""
    if isinstance(exc, PoolTimeout):
        try:
            psycopg.connect(conninfo, connect_timeout=2).close()
        except psycopg.Error as probe:
            exc = probe
        else:
            if away:
                return convert(exc, location, away=True)
    return convert(exc, location)


def on_own_connection(conninfo: str, location: str, patience: float, work: Callable[[psycopg.Connection], T]) -> T:
    """`work(conn)` on one connection outside the pool, run again whole on a fresh connection
    when the server breaks it (restarting, failing over) within the patience: for work that is
    safe to repeat, such as migrations, each applied with its record in one transaction."""
    deadline = time.monotonic() + patience
    while True:
        with connect(conninfo, location, max(0.0, deadline - time.monotonic())) as conn:
            try:
                return work(conn)
            except psycopg.Error as exc:
                if not retryable(exc) or deadline <= time.monotonic():
                    raise convert(exc, location) from None
        time.sleep(_BACKOFF[0])


def connect(conninfo: str, location: str, patience: float) -> psycopg.Connection:
    """One connection outside the pool, retried while the server is starting or away, but
    not while the URL names no host that exists."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return psycopg.connect(conninfo, autocommit=True, connect_timeout=max(1, int(min(patience, 10))))
        except psycopg.Error as exc:
            if not retryable(exc) or deadline <= time.monotonic():
                raise convert(exc, location) from None
            names = unknown_hosts(conninfo) if exc.sqlstate is None else []
            if names:
                named = f"the host name {names[0]!r} in {location} does not" if len(names) == 1 else \
                    f"none of the host names {', '.join(map(repr, names))} in {location}"
                raise InvalidInput(f"{named} resolve (DNS has no such name): check the host in the URL") from None
            time.sleep(_BACKOFF[0])


#: getaddrinfo's answers that the name does not exist, as opposed to a resolver that
#: could not answer now (EAI_AGAIN), which is retried like an absent server.
_NO_SUCH_NAME = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name))


def unknown_hosts(conninfo: str) -> list[str]:
    """The host names of `conninfo` when none of them exists in DNS, else []. Only names:
    a URL with an address (`hostaddr`), a socket directory or no host at all is never
    refused here."""
    params = conninfo_to_dict(conninfo)
    hosts = [h for h in str(params.get("host") or "").split(",") if h]
    if params.get("hostaddr") or not hosts or any(h.startswith(("/", "@")) for h in hosts):
        return []
    for host in hosts:
        try:
            socket.getaddrinfo(host, None)
        except socket.gaierror as exc:
            if exc.errno in _NO_SUCH_NAME:
                continue
        return []
    return hosts
