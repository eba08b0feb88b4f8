"""What a person reads when something goes wrong: one table, every cause, two layers.

Each cause has a first sentence for a person (what happened, whether anything is lost,
the first step) and an operator detail. The CLI, the HTTP service and the gateway all
render from this table. Every command printed carries the affected store's profile
(`-p NAME`) and home (`--home DIR` when it is not the default), and every path is the
affected store's own, never the process's default (S-18).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import Cause, Conflict, InvalidInput, NotFound, SessionDBError, classify
from .home import DEFAULT_PROFILE, STORE_FILENAME


@dataclass(frozen=True)
class Guidance:
    cause: Cause
    message: str  # the first sentence a person reads
    detail: str  # what an operator needs next
    exit_code: int
    http_status: int


# cause: (message, detail, exit code, HTTP status). Placeholders: {db} the database path,
# {dir} its directory, {cmd} the sessiondb command for this store (with -p/--home),
# {who} the profile in words.
_TABLE: dict[Cause, tuple[str, str, int, int]] = {
    Cause.LOCKED: (
        "The store {db} stayed locked by another process longer than sessiondb waits; "
        "nothing was lost, retry in a moment.",
        "`{cmd} doctor` lists the processes holding the store; a long maintenance job or a "
        "stuck process is the usual holder.",
        1, 503,
    ),
    Cause.DISK_FULL: (
        "The disk holding {db} is full, so the last write was not saved (everything saved "
        "before it is safe); free space on that disk, then retry.",
        "`df -h {dir}` shows the free space; sessiondb needs room for its write-ahead log "
        "beside the database.",
        1, 507,
    ),
    Cause.READ_ONLY: (
        "The store {db} cannot be written (a read-only file, directory or filesystem); "
        "nothing saved is lost, check the owner and permissions of {dir}.",
        "The store's directory must be writable by this user (sessiondb keeps it 0700) and "
        "its files 0600; a filesystem remounted read-only after errors also shows here.",
        1, 503,
    ),
    Cause.CORRUPT: (
        "The database {db} is damaged, so sessiondb stopped writing to it and kept the "
        "refused messages in the spool; quit every sessiondb process using {who}, then "
        "run `{cmd} doctor`.",
        "Do not delete {db}-wal or {db}-shm, and do not copy files over the store. "
        "`{cmd} recover --source {db} --output NEW` rebuilds what is readable into a new "
        "file and never touches the damaged one.",
        1, 503,
    ),
    Cause.FTS_INDEX: (
        "The search index of {db} is damaged; your messages are safe and still being saved, "
        "and `{cmd} sessions optimize` rebuilds the index once no other process holds the store.",
        "Search results may be incomplete until the rebuild. It also runs by itself the next "
        "time the store is opened while no other process holds it, and never while one does.",
        1, 503,
    ),
    Cause.REPLACED: (
        "The file {db} was replaced while sessiondb had it open, so writes to it stopped and "
        "the messages it could not save were kept in the spool; quit every process using "
        "{who}, then run `{cmd} doctor`.",
        "Something copied or moved another file over the live store. Nothing was written "
        "into the new file. Restarting the processes makes them open whatever {db} is now; "
        "the spool is replayed into it at the next healthy open.",
        1, 503,
    ),
    Cause.DELETED_WAL: (
        "The write-ahead log {db}-wal was deleted while in use, so writes stopped and the "
        "old log was saved in a retired-wal folder in {dir}; quit every process using "
        "{who} first, do not run a fix or delete files while any of them runs, then run "
        "`{cmd} doctor`.",
        "The retired-wal folder holds the captured log and a manifest.json describing it; "
        "keep it until the store has been checked.",
        1, 503,
    ),
    Cause.COMPRESSION_BUSY: (
        "Another compaction of this session is already running; nothing was lost, try "
        "again once it finishes.",
        "A compaction lease whose holder died is reclaimed when its holder is provably "
        "dead on this host, otherwise when its TTL runs out.",
        1, 409,
    ),
    Cause.COMPRESSION_CLOSED: (
        "This session was closed by compaction and has no live continuation; refresh the "
        "session (resume or start it again) and send the message there.",
        "The session ended with reason `compression` and no child session is open to take "
        "late writes; `{cmd} sessions show ID` shows its lineage.",
        1, 409,
    ),
    Cause.UNREACHABLE: (
        "The database server of {db} could not be reached within sessiondb's patience; "
        "nothing acknowledged is lost, start or reach the server, then retry.",
        "`pg_isready` with the URL's host and port tells whether the server accepts "
        "connections; a server restart or a failover shows here until it is back.",
        1, 503,
    ),
    Cause.AUTH_FAILED: (
        "The database server of {db} refused sessiondb's credentials; nothing was written, "
        "check the user and password in the store's URL.",
        "The role needs CONNECT on the database and CREATE on it for the first migration; "
        "the server's pg_hba.conf decides which hosts and methods it accepts.",
        1, 503,
    ),
    Cause.SERVER_DISK_FULL: (
        "The database server of {db} ran out of disk space, so the last write was rolled "
        "back (everything acknowledged before it is safe); free space on the server, then retry.",
        "The server's data directory (SHOW data_directory) and its WAL need room; a stuck "
        "replication slot holding WAL is a common cause.",
        1, 507,
    ),
    Cause.STANDBY: (
        "The database server of {db} is a read-only standby, so nothing was written; point "
        "the store's URL at the primary, then retry.",
        "After a failover the old primary may come back as a standby; "
        "`SELECT pg_is_in_recovery()` on the server says which it is.",
        1, 503,
    ),
    Cause.STATEMENT_TIMEOUT: (
        "The database server of {db} cancelled a statement that ran past its "
        "statement_timeout; nothing of it was written, retry, or raise the timeout.",
        "The server's or the role's statement_timeout applies to sessiondb's statements; "
        "a lock held by a long transaction elsewhere is the usual reason a statement waits.",
        1, 503,
    ),
    Cause.UNKNOWN: (
        "sessiondb hit an unexpected error on {db}; nothing saved is lost, run "
        "`{cmd} doctor` and include its output if you report the problem.",
        "The full error follows this message.",
        1, 500,
    ),
}


_INPUT_STATUSES = ((NotFound, 404), (Conflict, 409), (InvalidInput, 422))


def command_for(profile: str | None, home: Path | None) -> str:
    """The `sessiondb` command that targets this store: with --home and -p when needed."""
    parts = ["sessiondb"]
    if home is not None and home != Path.home() / ".sessiondb":
        parts += ["--home", str(home)]
    if profile not in (None, DEFAULT_PROFILE):
        parts += ["-p", profile]
    return " ".join(parts)


def home_of(db_path: Path, profile: str | None) -> Path:
    """The home a store belongs to: its directory, or three up for a named profile."""
    if profile not in (None, DEFAULT_PROFILE) and db_path.name == STORE_FILENAME:
        return db_path.parent.parent.parent
    return db_path.parent


def explain(cause: Cause, *, db_path: Path, profile: str | None, home: Path | None = None) -> Guidance:
    """The guidance for `cause` on the store at `db_path` of `profile`."""
    message, detail, exit_code, status = _TABLE[cause]
    values = {
        "db": str(db_path),
        "dir": str(db_path.parent),
        "cmd": command_for(profile, home if home is not None else home_of(db_path, profile)),
        "who": "the default profile" if profile in (None, DEFAULT_PROFILE) else f"profile {profile}",
    }
    return Guidance(cause, message.format(**values), detail.format(**values), exit_code, status)


def for_error(exc: BaseException, *, db_path: Path, profile: str | None, home: Path | None = None) -> Guidance:
    """Guidance for an exception. Errors outside the cause table (bad input, not found)
    have nothing to add beyond their own message, which is kept as the first sentence."""
    cause = classify(exc)
    if cause is Cause.UNKNOWN and isinstance(exc, SessionDBError):
        status = next((code for kind, code in _INPUT_STATUSES if isinstance(exc, kind)), 400)
        return Guidance(cause, str(exc), "", 1, status)
    return explain(cause, db_path=db_path, profile=profile, home=home)
