"""The doctor of one profile's store on a PostgreSQL server: what state it is in, and the
repairs that can be made in place.

The server keeps its own pages sound (checksums, WAL, crash recovery); what can go wrong
beneath sessiondb is its own logic's: a row's search words out of step with its text
(the words are derived), an index left invalid by an interrupted build, a session's
counters disagreeing with its rows, or rows breaking an invariant. `examine` runs
`Store.verify()`'s checks on a private read-only connection without opening the store
(no migration is applied, no pool made) and reads the schema's migrations, size and the
sessiondb connections on it. Damage is `none`; `index` (search words or an index: the fix
recomputes and rebuilds them, the messages are safe); `counters` (the fix recounts from
the rows); or `records` (rows as written break an invariant: nothing is changed in place,
the steps say what to do).

`repair` makes its changes beside the writers: each is one statement or one session's
transaction under the row lock an append takes, so unlike a file's repair it needs no
store to itself, and nobody is a holder to refuse it for. It first replays what this
host spooled for the store, as opening it would.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import psycopg
from psycopg import sql

from ...model import DoctorReport, SpoolReport, VerifyReport
from .. import spool
from ..rows import Rows
from ..sql import SQLRows
from . import pooler, verify
from .connect import EXTENSIONS_SCHEMA, connect, schema_for, split_url
from .errors import convert
from .messages import recount
from .migrations import MIGRATIONS
from .profiles import connections
from .store import DIALECT, spool_anchor

NONE, INDEX, COUNTERS, RECORDS = "none", "index", "counters", "records"
PATIENCE = 5.0  # seconds the doctor waits for a server that is away: it reports, it does not ride it out
# verify's checks by the damage each finds (the rest are RECORDS)
_BY_CHECK = {"the search words of every row are its text's": INDEX, "every search index is valid": INDEX,
             "counters": COUNTERS}
_SEVERITY = (NONE, INDEX, COUNTERS, RECORDS)

_STALE_WORDS = ("UPDATE messages SET words = message_words(role, content, parts) "
                "WHERE words IS DISTINCT FROM message_words(role, content, parts)")
_INVALID_INDEXES = (
    "SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid "
    "WHERE c.relnamespace = current_schema()::regnamespace AND NOT (i.indisvalid AND i.indisready) ORDER BY 1")
_MISCOUNTED = (
    "SELECT s.id FROM sessions AS s LEFT JOIN (SELECT session_id, count(*) AS n, coalesce(sum(jsonb_array_length("
    "json_value(tool_calls))) FILTER (WHERE tool_calls IS NOT NULL), 0) AS calls FROM messages "
    "WHERE state = 'active' GROUP BY session_id) AS c ON c.session_id = s.id "
    "WHERE s.message_count <> coalesce(c.n, 0) OR s.tool_call_count <> coalesce(c.calls, 0) ORDER BY 1")


@dataclass
class ServerReport(DoctorReport):
    location: str  # the server, database and schema (no password)
    server_version: str = ""
    exists: bool = False
    migrations: dict[str, Any] = field(default_factory=dict)  # applied, pending, unknown
    size: int = 0
    connections: list[str] = field(default_factory=list)  # sessiondb's connections on the schema
    checked: dict[str, int] = field(default_factory=dict)
    spool_pending: int = 0
    notes: list[str] = field(default_factory=list)  # worth knowing, not problems


class ServerDoctor:
    """The Doctor (store/optional.py) of one schema on a PostgreSQL server."""

    def __init__(self, url: str, *, profile: str | None, command: str, replay: Callable[[], SpoolReport],
                 checks: Callable[[Rows, int, VerifyReport], None]) -> None:
        self._conninfo, shown, in_url = split_url(url)
        self.schema = in_url or schema_for(profile)
        self.location = f"{shown}#{self.schema}"
        self._shown = shown
        self._command = command
        self._replay = replay
        self._checks = checks  # the checks over rows (store/verify.py), given by the neutral layer
        self._spool = spool_anchor(shown, self.schema)
        self._pooled = False  # its connection reaches the server through a pooler (pooler.py)

    def holders(self) -> list[str]:
        """None: a repair on a server runs beside the writers (the module says why)."""
        return []

    def examine(self, *, deep: bool = False) -> ServerReport:
        """The store's state; never writes. `deep` changes nothing: every check reads every row."""
        with self._connection() as conn:
            return self._examine(conn)

    def repair(self, *, deep: bool = False) -> ServerReport:
        """Replay this host's spool, recompute stale search words, rebuild invalid indexes and
        recount miscounted sessions; what it did is the report's `repair`."""
        actions: list[str] = []
        if spool.pending(self._spool):
            replayed = self._replay()
            actions.append(f"replayed {len(replayed.replayed)} spooled batch(es), {len(replayed.kept)} kept")
        with self._connection() as conn:
            before = self._examine(conn)
            if before.exists and not before.migrations["unknown"]:  # never a newer release's schema
                actions += self._repair(conn)
            report = self._examine(conn)
        report.repair = {"actions": actions}
        return report

    # --- the work ------------------------------------------------------------------------

    def _connection(self) -> psycopg.Connection:
        conn = connect(self._conninfo, self._shown, PATIENCE)
        try:
            self._pooled = pooler.behind_pooler(conn, self._shown)
            if not self._pooled:  # else each transaction sets its own (_transaction)
                conn.execute(sql.SQL("SET search_path TO {}, {}").format(
                    sql.Identifier(self.schema), sql.Identifier(EXTENSIONS_SCHEMA)))
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _transaction(self, conn: psycopg.Connection) -> Iterator[None]:
        """A transaction on the schema's search_path, through a pooler too (whose repairs
        commit as every acknowledged write does: synchronous_commit on)."""
        with conn.transaction():
            if self._pooled:
                pooler.pin(conn, pooler.search_path(self.schema, EXTENSIONS_SCHEMA), "on")
            yield

    def _examine(self, conn: psycopg.Connection) -> ServerReport:
        report = ServerReport(self.location, spool_pending=len(spool.pending(self._spool)))
        try:
            conn.read_only = True
            with self._transaction(conn):
                self._read(conn, report)
        except psycopg.Error as exc:
            raise convert(exc, self.location) from None
        finally:
            conn.read_only = None
        self._judge(report)
        return report

    def _read(self, conn: psycopg.Connection, report: ServerReport) -> None:
        report.server_version = conn.execute("SHOW server_version").fetchone()[0]
        report.exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (
            sql.Identifier(self.schema, "schema_migrations").as_string(conn),)).fetchone()[0]
        report.connections = connections(conn, self.schema)
        if not report.exists:
            return
        applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
        known = [name for name, _ in MIGRATIONS]
        report.migrations = {"applied": len(applied & set(known)), "pending": [n for n in known if n not in applied],
                             "unknown": sorted(applied - set(known))}
        report.size = int(conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'S')").fetchone()[0])
        if report.migrations["unknown"]:
            return  # a newer sessiondb's schema: this release's checks may not describe it
        found = verify.verify(conn, SQLRows(conn, DIALECT), self._checks)
        report.checked, report.notes = found.checked, list(found.notes)
        report.findings = list(found.problems)

    def _judge(self, report: ServerReport) -> None:
        """Damage, problems and steps from what was read."""
        if report.migrations.get("unknown"):
            report.problems.append(f"the schema {self.schema} was written by a newer sessiondb (migration "
                                   f"{report.migrations['unknown'][-1]}); this release cannot examine it")
            report.steps.append("upgrade sessiondb on this host, then run the doctor again")
            return
        if report.migrations.get("pending"):
            report.notes.append(f"{len(report.migrations['pending'])} migration(s) of this release not applied yet "
                                f"({report.migrations['pending'][0]}...): the next open of the store applies them")
        broken = [finding.split(": ", 1) for finding in report.findings]  # verify's "invariant: offender"
        kinds = [_BY_CHECK.get(invariant, RECORDS) for invariant, _ in broken]
        report.damage = max(kinds, key=_SEVERITY.index, default=NONE)
        report.problems += [f"{offender} (broken: {invariant})" for invariant, offender in broken]
        if report.spool_pending:
            report.problems.append(f"{report.spool_pending} batch(es) this host could not store wait in its spool")
        fix = f"run `{self._command} doctor --repair`"
        if INDEX in kinds or COUNTERS in kinds or report.spool_pending:
            report.steps.append(f"{fix}: it recomputes what is derived from the messages, which are safe, "
                                "beside the writers")
        if RECORDS in kinds:
            report.steps.append("keep a copy of the sessions named above (`sessiondb sessions export --session ID`) "
                                "and report them: their rows are as written, and nothing changes them in place")

    def _repair(self, conn: psycopg.Connection) -> list[str]:
        actions = []
        try:
            with self._transaction(conn):
                words = conn.execute(_STALE_WORDS).rowcount
            if words:
                actions.append(f"recomputed the search words of {words} message(s)")
            with self._transaction(conn):
                invalid = conn.execute(_INVALID_INDEXES).fetchall()
            for (index,) in invalid:  # outside a transaction, as CONCURRENTLY needs
                conn.execute(sql.SQL("REINDEX INDEX CONCURRENTLY {}").format(sql.Identifier(self.schema, index)))
                actions.append(f"rebuilt the index {index}")
            with self._transaction(conn):
                miscounted = conn.execute(_MISCOUNTED).fetchall()
            for (session_id,) in miscounted:
                with self._transaction(conn):  # under the row lock an append takes, so no append is miscounted
                    conn.execute("SELECT 1 FROM sessions WHERE id = %s FOR NO KEY UPDATE", (session_id,))
                    recount(conn, session_id)
                actions.append(f"recounted session {session_id}")
        except psycopg.Error as exc:
            raise convert(exc, self.location) from None
        return actions
