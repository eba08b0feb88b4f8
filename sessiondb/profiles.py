"""The profiles of a home, or of a server: listed, created and deleted on purpose, never
by a typo.

A named profile exists when its directory `<home>/profiles/NAME/` does; `main` (the
store in the home itself) always does. With `url`, the profiles are those of the server
it names (a PostgreSQL database holds one schema per profile, docs/fleet.md), and `main`
is the server's default store. Reading a profile that does not exist is refused
with `NoSuchProfile`, whose message says how to create it; only `create` (and an import
or the demo, which write on purpose) bring one into being. `delete` removes the
profile's directory with its store, spool and backups (on a server, its schema), and
refuses while another process holds the store, in the same words as maintenance (S-19,
S-43).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import InvalidInput, NotFound, StoreHeld
from .guidance import command_for
from .home import (DEFAULT_PROFILE, STORE_FILENAME, profile_dir, refuse_real_home_under_test, resolve_home,
                   validate_profile)
from .store.locations import (check_server_profile, delete_server_profile, list_server_profiles, open_doctor,
                              open_store, shown_location)


class NoSuchProfile(NotFound):
    """A named profile whose directory does not exist under the home."""


def list_profiles(home: str | os.PathLike[str] | None = None, *, url: str | None = None) -> list[str]:
    """`main`, then every named profile under the home (or on the server), sorted."""
    if url is not None:
        return list_server_profiles(url)
    root = resolve_home(home) / "profiles"
    names = [DEFAULT_PROFILE]
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.is_dir() and entry.name != DEFAULT_PROFILE and _is_name(entry.name):
                names.append(entry.name)
    return names


def exists(profile: str | None, home: str | os.PathLike[str] | None = None, *, url: str | None = None) -> bool:
    name = _canonical(profile)
    if name == DEFAULT_PROFILE:
        return True
    if url is not None:
        return check_server_profile(url, name) in list_server_profiles(url)
    return profile_dir(resolve_home(home), name).is_dir()


def require(profile: str | None, home: str | os.PathLike[str] | None = None, *,
            given_home: bool = False, url: str | None = None, command: str | None = None) -> None:
    """Raise NoSuchProfile, naming the command that creates it, unless the profile exists.

    `given_home` says the home was chosen explicitly, so the advice carries `--home`;
    `command` is how to spell the store in that advice, when the caller knows better.
    """
    if exists(profile, home, url=url):
        return
    root = resolve_home(home)
    others = [n for n in list_profiles(root, url=url) if n != DEFAULT_PROFILE]
    if command is None:
        command = command_for(None, root if given_home else None) if url is None else \
            f"sessiondb --store '{shown_location(url)}'"
    known = f" (profiles: {', '.join(others)})" if others else ""
    raise NoSuchProfile(f"no profile {profile!r} {_where(root, url)}{known}; create it with "
                        f"`{command} profiles create {profile}`")


def create(profile: str, home: str | os.PathLike[str] | None = None, *, url: str | None = None) -> str:
    """Create the profile's empty store (under the home: its directory); return its location."""
    name = _named(profile)
    root = resolve_home(home)
    if exists(name, root, url=url):
        raise InvalidInput(f"profile {name!r} already exists {_where(root, url)}")
    with open_store(url, profile=name) if url is not None else open_store(home=root, profile=name) as store:
        return store.location


def delete(profile: str, home: str | os.PathLike[str] | None = None, *, url: str | None = None) -> str:
    """Delete the profile's directory (store, sidecars, spool, backups), or its schema on
    the server; return what went.

    Refused (StoreHeld) while another process holds its store.
    """
    name = _named(profile)
    if url is not None:
        require(name, url=url)
        return delete_server_profile(url, name)
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
    return str(directory)


def _where(home: Path, url: str | None) -> str:
    return f"under {home}" if url is None else f"on {shown_location(url)}"


def _canonical(profile: str | None) -> str:
    return DEFAULT_PROFILE if profile in (None, "") else validate_profile(profile)


def _named(profile: str) -> str:
    name = _canonical(profile)
    if name == DEFAULT_PROFILE:
        raise InvalidInput(f"{DEFAULT_PROFILE!r} is the default store, always there: it cannot be "
                           "created or deleted as a profile")
    return name


def _is_name(name: str) -> bool:
    try:
        validate_profile(name)
    except InvalidInput:
        return False
    return True
