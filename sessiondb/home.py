"""Where sessiondb's files live: the home, its profiles, and their permissions.

The home is `$SESSIONDB_HOME` or `~/.sessiondb`. The default profile
(`main`, or no profile given) keeps its store in `<home>/state.db`; profile NAME keeps
its store in `<home>/profiles/NAME/state.db`.
Directories are created 0700 and files made 0600 with chmod on the path: nothing here
opens a database file, because opening and closing a descriptor on a live SQLite file
drops the process's POSIX locks on it.
"""

from __future__ import annotations

import functools
import ntpath
import os
import re
from pathlib import Path

from .errors import InvalidInput, RealHomeRefused

DEFAULT_PROFILE = "main"  # the root store's profile, as session keys spell it
STORE_FILENAME = "state.db"
SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
# The search index's own files beside a store (derived data: deletable, rebuilt from the store).
INDEX_SUFFIXES = ("-search", "-search-wal", "-search-shm", "-search-journal")
DIR_MODE = 0o700
FILE_MODE = 0o600

_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")

#: Set by a test suite (tests/conftest.py): this process and its children are under test.
UNDER_TEST_ENV = "SESSIONDB_UNDER_TEST"
#: Set to 1 to let a process under test open the real home anyway (deliberately, S-24).
ALLOW_REAL_HOME_ENV = "SESSIONDB_ALLOW_REAL_HOME"
_TEST_RUNNER = re.compile(r"(py\.?test|pytest-\d[\w.]*)(\.exe)?")


def validate_profile(name: str) -> str:
    """Return `name` if it is a valid profile name, else raise InvalidInput."""
    if not isinstance(name, str) or not _PROFILE_NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid profile name {name!r}: use 1-64 lowercase letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The home directory: the argument, else $SESSIONDB_HOME, else ~/.sessiondb."""
    if home is None:
        home = os.environ.get("SESSIONDB_HOME") or Path.home() / ".sessiondb"
    return Path(os.path.realpath(os.path.expanduser(os.fspath(home))))


def profile_dir(home: Path, profile: str | None) -> Path:
    """The directory holding a profile's store (the home itself for the default profile)."""
    if profile is None or profile == DEFAULT_PROFILE:
        return home
    return home / "profiles" / validate_profile(profile)


def store_path(
    path: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
) -> Path:
    """The canonical path of a store: an explicit path, or the profile's store in the home."""
    if path is not None:
        if home is not None or profile is not None:
            raise InvalidInput("give either a store path or a home/profile, not both")
        return Path(os.path.realpath(os.path.expanduser(os.fspath(path))))
    return profile_dir(resolve_home(home), profile) / STORE_FILENAME


def ensure_private_dir(directory: Path) -> None:
    """Create `directory` (and missing parents), each 0700 whatever the umask.

    A directory that already exists keeps its mode: a store opened in /tmp or a shared
    folder must not change who may use that folder. The files in it are 0600 anyway.
    """
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        d.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(d, DIR_MODE)


def make_private(db_path: Path) -> None:
    """chmod the database and any sidecar that exists to 0600 (by path, never by opening)."""
    for suffix in ("",) + SIDECAR_SUFFIXES:
        try:
            os.chmod(f"{db_path}{suffix}", FILE_MODE)
        except FileNotFoundError:
            pass


# --- test isolation (S-24) -----------------------------------------------------------


def real_home() -> Path:
    """The user's real sessiondb home, `~/.sessiondb` of the account's home directory.

    Read from the password database rather than $HOME, which a test may have moved.
    """
    try:
        import pwd

        base = pwd.getpwuid(os.getuid()).pw_dir
    except (ImportError, KeyError):
        base = os.path.expanduser("~")
    return Path(os.path.realpath(base)) / ".sessiondb"


def refuse_real_home_under_test(store_file: Path, *, environ: dict[str, str] | None = None,
                                runner: str | None | bool = None) -> None:
    """Raise RealHomeRefused if `store_file` is in the real home and this process runs under a test.

    Under a test means the suite's marker ($SESSIONDB_UNDER_TEST) is set, or, when the
    environment was rebuilt without it, a test runner is this process or one of its
    ancestors. $SESSIONDB_ALLOW_REAL_HOME=1 bypasses the check. `environ` and `runner`
    (a description of the runner found, or False for none) replace the real ones in tests.
    """
    env = os.environ if environ is None else environ
    if env.get(ALLOW_REAL_HOME_ENV) == "1":
        return
    protected = real_home()
    target = Path(os.path.realpath(store_file))
    if target != protected and protected not in target.parents:
        return
    if env.get(UNDER_TEST_ENV):
        why = f"${UNDER_TEST_ENV} is set"
    else:
        found = find_test_runner() if runner is None else runner
        if not found:
            return
        why = f"it runs under a test runner ({found})"
    raise RealHomeRefused(
        f"refusing to open the real store {target} from a test: {why}; point $SESSIONDB_HOME or --home "
        f"at a temporary directory (or set {ALLOW_REAL_HOME_ENV}=1 to open it deliberately)"
    )


def find_test_runner() -> str | None:
    """`PID N (command)` of a test runner among this process and its ancestors, or None."""
    return _runner_for(os.getpid())


@functools.lru_cache(maxsize=4)
def _runner_for(pid: int) -> str | None:
    try:
        import psutil

        chain = [psutil.Process(pid)]
        chain += chain[0].parents()
    except Exception:  # noqa: BLE001 - no process table: nothing to detect
        return None
    for process in chain:
        try:
            argv = process.cmdline()
        except Exception:  # noqa: BLE001 - gone, a zombie or not ours to inspect
            continue
        if is_test_runner(argv):
            return f"PID {process.pid} ({' '.join(argv)[:120]})"
    return None


def is_test_runner(argv: list[str]) -> bool:
    """Whether a command line runs a test runner: `pytest ...`, `python -m pytest ...`."""
    for i, arg in enumerate(argv[:3]):
        # ntpath splits on both separators, so a Windows path (C:\venv\Scripts\pytest.exe)
        # is read as it is on Windows whatever the OS this runs on; names there ignore case.
        if _TEST_RUNNER.fullmatch(ntpath.basename(arg).lower()):
            return True
        if arg == "-m" and i + 1 < len(argv) and argv[i + 1] in ("pytest", "py.test", "unittest"):
            return True
    return False


def fsync_dir(directory: Path) -> None:
    """Make a rename or unlink in `directory` durable (its entry list reaches the disk)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
