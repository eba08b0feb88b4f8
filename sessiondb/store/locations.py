"""Where a store lives, which backend serves it, and opening it.

A location is a file path (the embedded SQLite backend), a `sqlite:` URL, or a URL whose
scheme names another backend (`postgresql://...`, `memory://NAME`). A backend serves a
scheme by registering (`register_backend`, or an entry point of the `sessiondb.backends`
group naming what to register, so an installed package adds one without editing
sessiondb); the built-in backends register the same way, below. What is registered is
its provider: a module or object that offers `open_backend(target, *, profile, **options)`,
where the backend has one `open_doctor(target, *, profile, command, replay, checks)` (`checks`:
the checks over rows, store/verify.py, for a doctor that verifies rows itself), and where one
server holds many profiles `list_profiles(target)`, `delete_profile(target, profile)` and
`shown_location(target)`, the server as messages may name it (no password); or a bare
opener, the `open_backend` alone. A provider named by its import path ("package.module" or
"package.module:attribute") is imported when first used, so a backend's driver is loaded
only by the stores that need it. This is the only place outside `store/` backends are named.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from .. import embedding
from .. import home as homes
from .. import telemetry
from ..embedding import Embedder
from ..errors import InvalidInput, StorageError
from ..guidance import command_for, tell
from ..model import MessageLimits
from . import verify
from .capabilities import Doctor, checked_store
from .contract import Store

#: Backend kind (a URL scheme) -> its provider, or the import path of it (see the module docstring).
BACKENDS: dict[str, Any] = {}
#: The entry-point group through which an installed package registers a backend: each
#: entry point's name is a scheme, its value the import path of the provider.
ENTRY_POINTS = "sessiondb.backends"
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]+")
_discovered = False


def register_backend(scheme: str, opener: Any) -> None:
    """Serve locations `scheme://...` with a backend: `opener` is its provider (a module or
    object with `open_backend(target, *, profile, **options)` and optionally the doctor and
    profile calls the module docstring lists), a callable that is that `open_backend`, or
    the import path of either ("package.module[:attribute]"), imported when first used.
    A later registration of the same scheme replaces the earlier one."""
    if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
        raise InvalidInput(f"a backend's scheme is lower-case letters, digits, '+', '-' or '.' "
                           f"(two or more, a letter first), not {scheme!r}")
    if not (isinstance(opener, str) or callable(opener) or hasattr(opener, "open_backend")):
        raise InvalidInput(f"a backend's opener is a provider, a callable or an import path, not {opener!r}")
    BACKENDS[scheme] = opener


def known_schemes() -> list[str]:
    """The schemes a backend serves: the registered ones and those of installed packages."""
    _discover()
    return list(BACKENDS)


def _discover() -> None:
    """Register the backends installed packages declare (once; a registration made in
    code is kept over an entry point of the same scheme)."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    import importlib.metadata  # megabytes resident: loaded only when a scheme is not registered in code

    for entry in importlib.metadata.entry_points(group=ENTRY_POINTS):
        BACKENDS.setdefault(entry.name, entry.value)


register_backend("sqlite", "sessiondb.store.sqlite")
register_backend("postgresql", "sessiondb.store.postgres")
register_backend("postgres", "sessiondb.store.postgres")  # the scheme libpq also accepts
register_backend("memory", "sessiondb.store.memory")
#: The store opened when neither a location nor a home or profile is given, if set.
URL_VARIABLE = "SESSIONDB_URL"
#: The embedder a store is opened with when the caller names none (sessiondb.embedding's
#: names): how the CLI, the HTTP service, the MCP server and the gateway recall by meaning.
EMBEDDER_VARIABLE = "SESSIONDB_EMBEDDER"
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+:")  # a scheme of two letters or more: not a drive letter


@dataclass(frozen=True)
class Location:
    kind: str  # a scheme of BACKENDS
    target: Any  # what the backend opens: a resolved Path for sqlite, the URL otherwise
    profile: str | None  # None for the default profile
    home: Path | None  # the home the store belongs to, when it is a profile's


def locate(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
) -> Location:
    """Resolve a path, URL or home/profile to a backend kind and its target (nothing opened).

    With none of them given, $SESSIONDB_URL (when set) is the location."""
    if location is None and home is None and profile is None and os.environ.get(URL_VARIABLE):
        location = os.environ[URL_VARIABLE]
    if profile is not None:
        homes.validate_profile(profile)
    named = None if profile in (None, homes.DEFAULT_PROFILE) else profile
    if isinstance(location, str) and _URL.match(location):
        parts = urlsplit(location)
        kind = parts.scheme.lower()
        if kind == "sqlite":
            if home is not None or profile is not None:
                raise InvalidInput("give either a store location or a home/profile, not both")
            location = unquote(parts.path) or unquote(parts.netloc)
        elif kind in BACKENDS or kind in known_schemes():
            return Location(kind, location, named, None)
        else:
            known = ", ".join(f"{k}:" for k in BACKENDS)
            raise InvalidInput(f"no sessiondb backend serves {kind}: locations (known: a file path, {known}; "
                               f"a backend registers with sessiondb.register_backend)")
    path = homes.store_path(location, home=home, profile=profile)
    homes.refuse_real_home_under_test(path)  # S-24: a test never opens the user's real store
    return Location("sqlite", path, named, None if location is not None else homes.resolve_home(home))


def provider(kind: str) -> Any:
    """The provider serving `kind` (a scheme of BACKENDS), imported if it was registered by
    its import path."""
    if kind not in BACKENDS:
        _discover()
    provider = BACKENDS[kind]
    if isinstance(provider, str):
        module, _, attribute = provider.partition(":")
        provider = importlib.import_module(module)
        for name in filter(None, attribute.split(".")):
            provider = getattr(provider, name)
        BACKENDS[kind] = provider
    if not hasattr(provider, "open_backend"):  # a bare opener
        provider = SimpleNamespace(open_backend=provider)
        BACKENDS[kind] = provider
    return provider


def holds_profiles(location: str | os.PathLike[str]) -> bool:
    """Whether `location` names a server holding many profiles (a URL), not one store file."""
    return hasattr(provider(locate(location).kind), "list_profiles")


def list_server_profiles(url: str) -> list[str]:
    """The profiles on the server `url` names: `main`, then the others, sorted."""
    return _server(url).list_profiles(url)


def check_server_profile(url: str, profile: str) -> str:
    """`profile`, when it can name a profile on the server `url` names; else InvalidInput."""
    return _server(url).check_name(profile)


def delete_server_profile(url: str, profile: str) -> str:
    """Delete a profile's store on the server `url` names; what went (its schema)."""
    return _server(url).delete_profile(url, profile)


def shown_location(url: str) -> str:
    """The server `url` names, as messages may show it (no password)."""
    return _server(url).shown_location(url)


def _server(url: str) -> Any:
    module = provider(locate(url).kind)
    if not hasattr(module, "list_profiles"):
        raise InvalidInput(f"{url} is one store file, not a server holding profiles; "
                           "the profiles of a home are under its directory (--home)")
    return module


def open_store(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    clock: Callable[[], float] | None = None,
    limits: MessageLimits = MessageLimits(),
    replay_spool: bool = True,
    embedder: Embedder | str | None = None,
    **options: Any,
) -> Store:
    """Open the store at `location` (see sessiondb.open_store) through its backend; `clock`,
    `limits` and `replay_spool` (False: leave the spool for the caller, store/captured.py)
    belong to the neutral layer, `embedder` to both (the backend computes the messages'
    vectors, the neutral layer a question's), other options to the backend."""
    where = locate(location, home=home, profile=profile)
    check_options(options)
    if embedder is None and os.environ.get(EMBEDDER_VARIABLE):
        embedder = os.environ[EMBEDDER_VARIABLE]
    if embedder is not None:
        embedder = embedding.checked(embedder)
        options["embedder"] = embedder
    module = provider(where.kind)
    try:
        backend = module.open_backend(where.target, profile=where.profile, **options)
    except StorageError as exc:  # a refused open names the store, as every later refusal does
        shown = module.shown_location(where.target) if hasattr(module, "shown_location") else where.target
        tell(exc, location=shown, profile=where.profile)
        raise
    try:
        return checked_store(backend, profile=where.profile, clock=clock, limits=limits, replay_spool=replay_spool,
                             embedder=embedder)
    except BaseException:
        backend.close()
        raise


#: What every backend's `durability` option means: "full" loses no acknowledged write to a
#: power loss; "normal" may lose the last ones (never to a crash of the writing process).
DURABILITIES = ("full", "normal")


def check_options(options: dict[str, Any]) -> None:
    """The options every backend takes, checked once before any backend sees them."""
    if "durability" in options and options["durability"] not in DURABILITIES:
        raise InvalidInput(f"durability must be 'full' or 'normal', not {options['durability']!r}")
    patience = options.get("patience", 0)
    if isinstance(patience, bool) or not (isinstance(patience, (int, float)) and patience >= 0):
        raise InvalidInput("patience must be a non-negative number of seconds")


def open_doctor(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
) -> Doctor:
    """The doctor of the store at `location`: examines (and repairs) it without opening it
    as a store, so a damaged store gets no writer. InvalidInput if its backend has none."""
    where = locate(location, home=home, profile=profile)
    module = provider(where.kind)
    if not hasattr(module, "open_doctor"):
        raise InvalidInput(f"the {where.kind} backend has no doctor")
    command = command_for(where.profile, where.home if home is not None else None)
    return telemetry.doctor(module.open_doctor(
        where.target, profile=where.profile, command=command,
        replay=lambda: _replay(location, home=home, profile=profile), checks=verify.check))


def _replay(location: Any, *, home: Any, profile: str | None) -> Any:
    """Open the store normally (which replays its spool) and report what is still kept."""
    with open_store(location, home=home, profile=profile) as store:
        return store.replay_spool()
