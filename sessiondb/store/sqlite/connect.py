"""Opening SQLite connections: the version gate, journal-mode policy, durability and patience.

Policy, in one place:
- SQLite builds with the WAL-reset corruption bug (before 3.51.3) are refused.
- On a local filesystem the store runs in WAL. On network and virtual filesystems (NFS,
  SMB, 9p, virtiofs, FUSE), where WAL's shared memory cannot be trusted, it uses the
  rollback journal, except that a file already in WAL is never downgraded: another
  process may be using it.
- durability "full": an acknowledged commit survives power loss. With a rollback journal
  that is synchronous=FULL; in WAL the writer syncs the WAL after COMMIT instead, outside
  the write lock (store.py sets it up, writer.py says why that is as safe).
  "normal" is synchronous=NORMAL: it survives the process dying, not the machine.
- A locked database is waited for by a busy handler with jittered back-off, within a
  patience budget; past it the caller gets StoreBusy.
- A transaction ended by SQLite itself on an error is not ended again (`transaction`).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, TypeVar

import apsw

from ...errors import UnsupportedSQLite
from ...query import fold

T = TypeVar("T")

MIN_SQLITE = (3, 51, 3)
DURABILITY = {"full": "FULL", "normal": "NORMAL"}
DEFAULT_PATIENCE = 30.0  # seconds a caller may wait for another process's lock
WAL_SIZE_LIMIT = 16 * 1024 * 1024  # bytes a WAL keeps once reset after a checkpoint

NETWORK_FILESYSTEMS = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "9p", "virtiofs", "afs", "ceph",
     "glusterfs", "lustre", "gpfs", "sshfs"}
)

# "SDB1": stamped into the header so a foreign SQLite file is recognised as one.
APPLICATION_ID = 0x53444231


@contextmanager
def transaction(conn: apsw.Connection, begin: str = "BEGIN") -> Iterator[None]:
    """`begin` ... COMMIT, rolled back when the block raises. SQLite ends a transaction
    itself on some errors (an I/O error, a full disk): a ROLLBACK then fails (no transaction
    is active) and its error would take the place of the one that ended it, which open, the
    doctor and the index's healing classify. So the ROLLBACK is sent only while one is open,
    and the COMMIT too: a block may end it itself (rolled back when it finds nothing to do)."""
    conn.execute(begin)
    try:
        yield
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if conn.in_transaction:
        conn.execute("COMMIT")


def check_sqlite_version(version: str) -> None:
    """Refuse SQLite builds that can corrupt a WAL database under concurrent writers."""
    parts = tuple(int(p) for p in version.split(".")[:3])
    if parts < MIN_SQLITE:
        raise UnsupportedSQLite(
            f"SQLite {version} has the WAL-reset corruption bug; sessiondb needs "
            f"{'.'.join(map(str, MIN_SQLITE))} or newer: upgrade the apsw package "
            "(pip install -U apsw), which bundles a fixed SQLite"
        )


def filesystem_type(path: Path, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """The type of the filesystem holding `path` (longest mount-point prefix), or None."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, best_type = "", None
    for line in lines:
        fields = line.split()
        try:
            sep = fields.index("-")
            mount_point = _unescape(fields[4])
            fstype = fields[sep + 1]
        except (ValueError, IndexError):
            continue
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, fstype
    return best_type


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal; everything else,
    # non-ASCII names included, is the raw (UTF-8) path.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def is_network_filesystem(fstype: str | None) -> bool:
    return fstype is not None and (fstype in NETWORK_FILESYSTEMS or fstype.startswith("fuse"))


def busy_handler(patience: float, sleep: Callable[[float], None] = time.sleep,
                 monotonic: Callable[[], float] = time.monotonic) -> Callable[[int], bool]:
    """A busy handler retrying with jittered exponential back-off until `patience` runs out.

    SQLite calls it with the number of prior calls for this lock wait (0 on the first).
    Returning False makes SQLite raise BUSY, which the store turns into StoreBusy.
    """
    started = [0.0]

    def handler(attempt: int) -> bool:
        now = monotonic()
        if attempt == 0:
            started[0] = now
        remaining = patience - (now - started[0])
        if remaining <= 0:
            return False
        ceiling = min(0.1, 0.001 * (2 ** min(attempt, 10)))
        sleep(min(remaining, random.uniform(ceiling / 2, ceiling)))
        return True

    return handler


CACHE_KIB = 16000  # KiB of page cache each connection keeps per database file


def connect(path: Path, *, patience: float, vfs: str | None = None, immutable: bool = False) -> apsw.Connection:
    """Open a connection with the settings every sessiondb connection shares.

    `immutable` reads the main file alone, read-only, with no locks, WAL or -shm: only for
    a file that nothing is writing (the full-disk fallback, store.py).
    """
    # URI: so a connection can ATTACH the search index (or the store) through a VFS by name.
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_NOFOLLOW | apsw.SQLITE_OPEN_URI
    name = str(path)
    if immutable:
        flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_NOFOLLOW
        name = f"file:{file_uri_path(path)}?immutable=1"
    options = {"vfs": vfs} if vfs else {}
    conn = apsw.Connection(name, flags=flags, statementcachesize=256, **options)
    try:
        conn.set_busy_handler(busy_handler(patience))
        # A statement's plan is made once, when it is prepared (the query planner stability
        # guarantee). Without it SQLite plans around the values bound to a LIMIT, or compared
        # with a partial index's word, and so prepares such a statement again whenever another
        # value is bound: three statements of every append and its indexing, about 500k
        # instructions (bench/exact.py). Fixed words are written into statements instead
        # (store/sql.py's _WORDS).
        conn.config(apsw.SQLITE_DBCONFIG_ENABLE_QPSG, 1)
        # None of these returns a row, so one string runs them all (APSW runs a statement
        # after a row-returning one only as its rows are read). Read connections then keep
        # a smaller page cache for the store (configure_reader).
        conn.execute(f"PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY; PRAGMA cache_size=-{CACHE_KIB}")
        # What substring search compares (search.py): the same folding on every backend.
        conn.create_scalar_function("fold", _fold_or_null, 1, deterministic=True)
    except BaseException:
        conn.close()
        raise
    return conn


def _fold_or_null(text: str | None) -> str | None:
    return None if text is None else fold(text)


def file_uri_path(path: Path) -> str:
    """`path` escaped for an SQLite `file:` URI."""
    return str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def configure_writer(conn: apsw.Connection, path: Path, durability: str, *, patience: float) -> str:
    """Set the journal mode and durability of the writing connection; returns the mode."""
    # A new file keeps a map of its pages, so the pages a removal frees can be handed back
    # to the file system a few at a time beside writers (release_space), where a file
    # without one gives them back only in a VACUUM that needs every other process gone.
    # It must be chosen before the file's first page is written (another opener making the
    # file meanwhile is waited for, as below); appends pay nothing measurable (1.673 WAL
    # pages an append against 1.672).
    _patiently(patience, lambda: conn.execute("PRAGMA page_count").fetchone()[0] == 0
               and conn.execute("PRAGMA auto_vacuum=INCREMENTAL").fetchall())
    current = conn.execute("PRAGMA journal_mode").fetchone()[0].lower()
    if is_network_filesystem(filesystem_type(path.parent)):
        mode = current if current == "wal" else _set_journal_mode(conn, "delete", patience)
    else:
        mode = _set_journal_mode(conn, "wal", patience)
    set_durability(conn, durability)
    # What a write deletes is overwritten, freed pages too: a forgotten message leaves no
    # bytes behind in the file (S-55). Appends free nearly nothing, so they pay nearly nothing.
    conn.execute("PRAGMA secure_delete=ON")
    # When the WAL is reset after a checkpoint it is truncated to this, so space freed
    # after a full disk (or a long reader) is not held by a WAL that once grew.
    conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    return mode


def set_durability(conn: apsw.Connection, durability: str) -> None:
    conn.execute(f"PRAGMA synchronous={DURABILITY[durability]}")


def _set_journal_mode(conn: apsw.Connection, mode: str, patience: float) -> str:
    # Entering or leaving WAL reads the file's header, then writes it: SQLite never calls
    # the busy handler for that upgrade (two connections upgrading could wait on each
    # other), so a first open racing another process's would fail at once.
    return _patiently(patience, lambda: conn.execute(f"PRAGMA journal_mode={mode}").fetchone()[0].lower())


def _patiently(patience: float, step: Callable[[], T]) -> T:
    """`step`, run again while another connection holds the file, for the wait the busy
    handler would have given (a first open's steps that SQLite runs without it)."""
    wait, attempt = busy_handler(patience), 0
    while True:
        try:
            return step()
        except apsw.BusyError:
            if not wait(attempt):
                raise
            attempt += 1


#: KiB of page cache a read connection keeps: a long resume or transcript read fills any
#: cache it has, and every KiB of it stays resident, while the OS's own cache serves such
#: a read about as fast. With 16 MB, resuming 20,000 messages peaked 11 MB higher and was
#: no faster; searches gain from a few MB (bench/bench_resume.py's store: at 2 MB up to
#: 2 ms slower than at 16 MB, at 4 MB within noise of it).
READER_CACHE_KIB = 4000


def configure_reader(conn: apsw.Connection) -> None:
    conn.execute(f"PRAGMA query_only=ON; PRAGMA cache_size=-{READER_CACHE_KIB}")
