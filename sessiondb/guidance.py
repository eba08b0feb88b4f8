"""What a person reads when something goes wrong: one table, every cause, two layers.

Each cause has a first sentence for a person (what happened, whether anything is lost,
the first step) and an operator detail. The CLI, the HTTP service and the gateway all
render from this table. Every command printed carries the affected store's profile
(`-p NAME`) and home (`--home DIR` when it is not the default), and every path is the
affected store's own, never the process's default (S-18).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .errors import Cause, Conflict, InvalidInput, NotFound, SessionDBError, StorageError, classify
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
        "The store {db} stayed busy longer than sessiondb waits (another process held its "
        "lock, or every connection of this process's pool was in use); nothing was lost, "
        "retry in a moment.",
        "`{cmd} doctor` lists the processes holding the store; a long maintenance job or a "
        "stuck process is the usual holder. A process whose own pool stays busy (a server's "
        "store) needs a larger `pool_size`.",
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
        "into the new file. New opens use whatever {db} is now; what was written for the "
        "replaced file (its log and the spool) stays aside until `{cmd} restore-captured "
        "--other-generations` brings it in, which the doctor names.",
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
        "The session ended with reason `compression` and the session continuing it has ended "
        "too (by another compaction or for any other reason), so none takes late writes; "
        "`{cmd} sessions transcript ID` shows its lineage.",
        1, 409,
    ),
    Cause.UNREACHABLE: (
        "The database server of {db} could not be reached within sessiondb's patience; "
        "nothing acknowledged is lost, start or reach the server, then retry.",
        "`pg_isready` with the URL's host and port tells whether the server accepts "
        "connections; a server restart or a failover shows here until it is back.",
        1, 503,
    ),
    Cause.UNAVAILABLE: (
        "The database server of {db} was unavailable during a write and stayed away past "
        "sessiondb's patience: that write may or may not be stored; retrying stores it once, "
        "once the server is back (everything acknowledged before it is safe).",
        "Appends are matched by uid, so sending the same messages again with their uids adds "
        "only what is missing; `pg_isready` with the URL's host and port tells whether the "
        "server accepts connections again.",
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
        "After a failover the old primary may come back as a standby; a URL naming every node "
        "(postgresql://h1:p1,h2:p2/db) follows the primary wherever it is (docs/fleet.md); "
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
    Cause.POOLER_MODE: (
        "A connection pooler in front of the database server of {db} refuses the transactions "
        "sessiondb's writes need (pgbouncer in statement mode); nothing was written, set "
        "pool_mode = transaction (or session) in the pooler's configuration, then open the store again.",
        "pgbouncer's `pool_mode` (in its [pgbouncer] section, or per database in [databases]) "
        "must be `transaction` or `session`; docs/fleet.md says how sessiondb runs through one.",
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


def error_code(exc: BaseException, cause: Cause) -> str:
    """The stable name every face reports for an error: its cause (`locked`, `corrupt`...)
    when it has one, else its kind (`not_found`, `store_held`...)."""
    if cause is not Cause.UNKNOWN:
        return cause.value
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(exc).__name__).lower()


def home_of(db_path: Path, profile: str | None) -> Path:
    """The home a store belongs to: its directory, or three up for a named profile."""
    if profile not in (None, DEFAULT_PROFILE) and db_path.name == STORE_FILENAME:
        return db_path.parent.parent.parent
    return db_path.parent


def _command(db_path: Path | str, profile: str | None, home: Path | None) -> str:
    """The command for the store at `db_path`: a store file outside a home's layout, or a
    store on a server, is named with --store, as it was opened."""
    shown = str(db_path)
    if home is None and "://" in shown:
        return command_for(profile, None).replace("sessiondb", f"sessiondb --store '{shown.split('#')[0]}'", 1)
    if home is None and Path(shown).name != STORE_FILENAME:
        return f"sessiondb --store '{shown}'"
    return command_for(profile, home if home is not None else home_of(Path(shown), profile))


def explain(cause: Cause, *, db_path: Path | str, profile: str | None, home: Path | None = None) -> Guidance:
    """The guidance for `cause` on the store at `db_path` (a path, or a server's location
    as the store shows it) of `profile`."""
    message, detail, exit_code, status = _TABLE[cause]
    values = {
        "db": str(db_path),
        "dir": str(Path(db_path).parent),
        "cmd": _command(db_path, profile, home),
        "who": "the default profile" if profile in (None, DEFAULT_PROFILE) else f"profile {profile}",
    }
    return Guidance(cause, message.format(**values), detail.format(**values), exit_code, status)


def for_error(exc: BaseException, *, db_path: Path | str, profile: str | None,
              home: Path | None = None) -> Guidance:
    """Guidance for an exception. Errors outside the cause table and the storage layer (bad
    input, not found) have nothing to add beyond their own message, which is kept as the
    first sentence."""
    cause = classify(exc)
    if cause is Cause.UNKNOWN and isinstance(exc, SessionDBError) and not isinstance(exc, StorageError):
        status = next((code for kind, code in _INPUT_STATUSES if isinstance(exc, kind)), 400)
        return Guidance(cause, str(exc), "", 1, status)
    return explain(cause, db_path=db_path, profile=profile, home=home)


def tell(exc: BaseException, *, location: Path | str, profile: str | None) -> None:
    """Make a storage error say what a person reads first for its cause on this store: one
    sentence naming the store, with the first step, the same the CLI prints (S-43), so the
    line an agent's log keeps can be acted on. What the failing layer said stays as the
    error's `detail` and a note its traceback shows. Other errors are left as they are."""
    if not isinstance(exc, StorageError) or exc.detail is not None:
        return
    sentence = for_error(exc, db_path=location, profile=profile).message
    exc.detail = str(exc)
    exc.args = (sentence,)
    exc.add_note(exc.detail)


# --- why a turn ended (S-50, S-51) ------------------------------------------------------
#
# A turn's end reason is a stable name; this table gives each its outcome and the sentence
# a person reads. The stored record, the log line and every surface render from here, so
# they cannot disagree. An interrupt from a system producer names it in parentheses:
# `interrupted_by_system(turn_liveness_watchdog)`; one from a producer nobody registered
# still stops the turn, and says so: `interrupted_by_system(unregistered:budget_guard)`.

COMPLETED, INTERRUPTED, FAILED = "completed", "interrupted", "failed"
OUTCOMES = (COMPLETED, INTERRUPTED, FAILED)

BY_USER = "interrupted_by_user"
DURING_CALL = "interrupted_during_api_call"
BY_SYSTEM = "interrupted_by_system"

# reason: (outcome, sentence). {producer} is the producer's phrase (PRODUCERS).
_TURN_REASONS: dict[str, tuple[str, str]] = {
    "completed": (COMPLETED, "The turn finished."),
    "failed": (FAILED, "The turn stopped on an error before it finished; what it did so far is kept."),
    BY_USER: (INTERRUPTED, "You stopped this turn."),
    DURING_CALL: (INTERRUPTED, "You stopped this turn while a model call was in flight; that call's answer "
                               "was not used."),
    BY_SYSTEM: (INTERRUPTED, "{producer} stopped this turn; you did not."),
    DURING_CALL + "()": (INTERRUPTED, "{producer} stopped this turn while a model call was in flight; you did "
                                      "not, and that call's answer was not used."),
    "redirect_limit": (INTERRUPTED, "This turn was redirected as many times as allowed, so it stopped; your "
                                    "last correction was not lost: it is the next turn."),
    "resume_pending": (INTERRUPTED, "The process running this turn stopped before it finished; the gateway "
                                    "picks the conversation up again with the next turn."),
    "stale_turn": (INTERRUPTED, "The process running this turn stopped too long ago to pick it up again, so "
                                "the session was ended; start a new one to go on."),
}

#: The system producers sessiondb knows, with the phrase a person reads.
PRODUCERS: dict[str, str] = {
    "cron_inactivity_watchdog": "The cron job's inactivity watchdog",
    "turn_liveness_watchdog": "The turn liveness watchdog (the turn showed no progress)",
    "lease_lost": "Losing the session's lease to another process",
    "gateway_inactivity_timeout": "The gateway's inactivity timeout",
}
#: How a producer nobody registered is named in a reason: `unregistered:NAME`, or
#: `unregistered` alone when what was given is not a producer name at all.
UNREGISTERED = "unregistered"
_PRODUCER_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
_WITH_PRODUCER = re.compile(rf"({BY_SYSTEM}|{DURING_CALL})\(([^()]*)\)")


def register_producer(name: str, phrase: str) -> None:
    """Add a system producer of interrupts (a name like `budget_guard`) and its phrase."""
    if not isinstance(name, str) or not _PRODUCER_NAME.fullmatch(name):
        raise InvalidInput(f"a producer name is lowercase letters, digits and _ (at most 64), not {name!r}")
    if name == "user":
        raise InvalidInput("`user` is the person's own stop, not a system producer")
    if name == UNREGISTERED:
        raise InvalidInput(f"`{UNREGISTERED}` names the producers nobody registered; choose another name")
    if not isinstance(phrase, str) or not phrase.strip():
        raise InvalidInput("a producer needs a phrase a person reads, such as 'The budget guard'")
    PRODUCERS[name] = phrase.strip()


def registered(producer: object) -> bool:
    """Whether `producer` is the person (`user`) or a system producer sessiondb knows."""
    return isinstance(producer, str) and (producer == "user" or producer in PRODUCERS)


def interrupt_reason(producer: object, *, in_api_call: bool) -> str:
    """The end reason of an interrupt from `producer` (`user` for a person's stop).

    Every interrupt gets one, so every interrupt stops its turn: a producer nobody
    registered is named as unregistered rather than refused, since refusing it would
    leave the turn it meant to stop running (S-50)."""
    if producer == "user":
        return DURING_CALL if in_api_call else BY_USER
    category = DURING_CALL if in_api_call else BY_SYSTEM
    if registered(producer):
        return f"{category}({producer})"
    if isinstance(producer, str) and _PRODUCER_NAME.fullmatch(producer):
        return f"{category}({UNREGISTERED}:{producer})"
    return f"{category}({UNREGISTERED})"


def turn_outcome(reason: str) -> str:
    """The outcome a reason ends a turn with; InvalidInput for a reason not in the table."""
    return _reason_entry(reason)[0][0]


def explain_turn(reason: str) -> str:
    """The sentence a person reads for why a turn ended."""
    (_outcome, sentence), producer = _reason_entry(reason)
    if producer is None:
        return sentence
    if producer == UNREGISTERED:
        return sentence.format(producer="A system producer nobody registered")
    if producer.startswith(UNREGISTERED + ":"):
        name = producer.partition(":")[2]
        return sentence.format(producer=f"A system producer nobody registered (`{name}`)")
    # A producer registered in another process is still named, by its own name.
    return sentence.format(producer=PRODUCERS.get(producer, f"The system producer `{producer}`"))


def _reason_entry(reason: str) -> tuple[tuple[str, str], str | None]:
    if not isinstance(reason, str):
        raise InvalidInput(f"a turn's end reason must be text, not {type(reason).__name__}")
    match = _WITH_PRODUCER.fullmatch(reason)
    if match is not None:
        category, producer = match.groups()
        prefix, colon, name = producer.partition(":")
        if colon and prefix == UNREGISTERED:
            producer_ok = _PRODUCER_NAME.fullmatch(name) is not None
        else:
            producer_ok = _PRODUCER_NAME.fullmatch(producer) is not None and producer != "user"
        if not producer_ok:
            raise InvalidInput(f"{reason!r} does not name a system producer (lowercase letters, digits and _, "
                               f"or {UNREGISTERED}:NAME)")
        return _TURN_REASONS[BY_SYSTEM if category == BY_SYSTEM else DURING_CALL + "()"], producer
    if reason in _TURN_REASONS and not reason.endswith("()") and reason != BY_SYSTEM:
        return _TURN_REASONS[reason], None
    raise InvalidInput(f"unknown turn end reason {reason!r} (expected one of "
                       f"{', '.join(r for r in _TURN_REASONS if r != BY_SYSTEM and not r.endswith('()'))}, "
                       f"{BY_SYSTEM}(PRODUCER) or {DURING_CALL}(PRODUCER))")
