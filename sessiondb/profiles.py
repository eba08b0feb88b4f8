"""The profiles of a home: listed, created and deleted on purpose, never by a typo.

A named profile exists when its directory `<home>/profiles/NAME/` does; `main` (the
store in the home itself) always does. Reading a profile that does not exist is refused
with `NoSuchProfile`, whose message says how to create it; only `create` (and an import
or the demo, which write on purpose) bring one into being. `delete` removes the
profile's directory with its store, spool and backups, and refuses while another process
holds the store, in the same words as maintenance (S-19, S-43).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import InvalidInput, NotFound, StoreHeld
from .guidance import command_for
from .home import (DEFAULT_PROFILE, STORE_FILENAME, profile_dir, refuse_real_home_under_test, resolve_home,
                   validate_profile)
from .store.locations import open_doctor, open_store


class NoSuchProfile(NotFound):
    """A named profile whose directory does not exist under the home."""


def list_profiles(home: str | os.PathLike[str] | None = None) -> list[str]:
    """`main`, then every named profile under the home, sorted."""
    root = resolve_home(home) / "profiles"
    names = [DEFAULT_PROFILE]
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and entry.name != DEFAULT_PROFILE and _is_name(entry.name):
                names.append(entry.name)
    return names


def exists(profile: str | None, home: str | os.PathLike[str] | None = None) -> bool:
    name = _canonical(profile)
    return name == DEFAULT_PROFILE or profile_dir(resolve_home(home), name).is_dir()


def require(profile: str | None, home: str | os.PathLike[str] | None = None, *,
            given_home: bool = False) -> None:
    """Raise NoSuchProfile, naming the command that creates it, unless the profile exists.

    `given_home` says the home was chosen explicitly, so the advice carries `--home`.
    """
    if exists(profile, home):
        return
    root = resolve_home(home)
    others = [n for n in list_profiles(root) if n != DEFAULT_PROFILE]
    create = command_for(None, root if given_home else None)
    known = f" (profiles: {', '.join(others)})" if others else ""
    raise NoSuchProfile(f"no profile {profile!r} under {root}{known}; create it with "
                        f"`{create} profiles create {profile}`")


def create(profile: str, home: str | os.PathLike[str] | None = None) -> Path:
    """Create the profile's directory and its empty store; return the store's path."""
    name = _named(profile)
    root = resolve_home(home)
    if exists(name, root):
        raise InvalidInput(f"profile {name!r} already exists under {root}")
    with open_store(home=root, profile=name) as store:
        return Path(store.location)


def delete(profile: str, home: str | os.PathLike[str] | None = None) -> Path:
    """Delete the profile's directory (store, sidecars, spool, backups); return what went.

    Refused (StoreHeld) while another process holds its store.
    """
    name = _named(profile)
    root = resolve_home(home)
    require(name, root)
    directory = profile_dir(root, name)
    db = directory / STORE_FILENAME
    refuse_real_home_under_test(db)
    held_by = open_doctor(db).holders()
    if held_by:
        raise StoreHeld(f"delete refused: {db} is held by {', '.join(map(str, held_by))}; quit those "
                        "processes and run it again", held_by)
    shutil.rmtree(directory)
    return directory


def _canonical(profile: str | None) -> str:
    return DEFAULT_PROFILE if profile in (None, "") else validate_profile(profile)


def _named(profile: str) -> str:
    name = _canonical(profile)
    if name == DEFAULT_PROFILE:
        raise InvalidInput(f"{DEFAULT_PROFILE!r} is the home's own store, always there: it cannot be "
                           "created or deleted as a profile")
    return name


def _is_name(name: str) -> bool:
    try:
        validate_profile(name)
    except InvalidInput:
        return False
    return True
