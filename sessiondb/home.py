"""Where sessiondb's files live: the home, its profiles, and their permissions.

The home is `$SESSIONDB_HOME` or `~/.sessiondb`. The default profile
(`main`, or no profile given) keeps its store in `<home>/state.db`; profile NAME keeps
its store in `<home>/profiles/NAME/state.db`.
Directories are created 0700 and files made 0600 with chmod on the path: nothing here
opens a database file, because opening and closing a descriptor on a live SQLite file
drops the process's POSIX locks on it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .errors import InvalidInput

DEFAULT_PROFILE = "main"  # the root store's profile, as session keys spell it
STORE_FILENAME = "state.db"
SIDECAR_SUFFIXES = ("-wal", "-shm", "-journal")
DIR_MODE = 0o700
FILE_MODE = 0o600

_PROFILE_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


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
    """Create `directory` (and missing parents) and make it 0700.

    Parents that already exist keep their mode: only what sessiondb creates, and the
    store's own directory, are tightened.
    """
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        d.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(d, DIR_MODE)
    os.chmod(directory, DIR_MODE)


def make_private(db_path: Path) -> None:
    """chmod the database and any sidecar that exists to 0600 (by path, never by opening)."""
    for suffix in ("",) + SIDECAR_SUFFIXES:
        try:
            os.chmod(f"{db_path}{suffix}", FILE_MODE)
        except FileNotFoundError:
            pass
