"""What every command shares: the chosen home (or store) and profile, how to open their
store, and how a refusal becomes one line (or, with --json, one JSON object) and exit
status 1.

With `--store` (or $SESSIONDB_URL) the store is the one that location names instead of
the home's: a server's URL, whose profiles are that server's (`-p` picks one), or a
store file."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import click

from .. import open_store, profiles
from ..errors import SessionDBError, StorageError, StoreHeld, classify
from ..guidance import command_for, error_code, for_error
from ..store.contract import Store
from ..store.locations import holds_profiles, locate, shown_location

T = TypeVar("T")
EMPTY = "memory://"  # a new, empty store of this process's own, for a dry run into a store not made yet


class CliError(click.ClickException):
    """A refusal with the stable `code` and `detail` the HTTP API gives the same error."""

    def __init__(self, message: str, code: str = "refused", detail: Any = "") -> None:
        super().__init__(message)
        self.code = code
        self.detail = detail


@dataclass
class CliContext:
    home: str | None
    profile: str | None
    store: str | None = None  # --store or $SESSIONDB_URL: the store instead of the home's
    store_given: bool = False  # --store was on the command line (advice must repeat it)

    @property
    def command(self) -> str:
        """`sessiondb` as this invocation spelled its store: with --home (or --store) and -p
        when given."""
        if self.store is None:
            return command_for(self.profile, None if self.home is None else Path(self.home))
        return command_for(self.profile, None).replace("sessiondb", self._bare_command, 1)

    @property
    def server(self) -> str | None:
        """The URL of the server holding the profiles, when the store is on one."""
        with self.refusals():
            return self.store if self.store is not None and holds_profiles(self.store) else None

    def require_profile(self, profile: str | None = None) -> None:
        """Refuse, saying how to create it, a named profile (or a store file) that does not exist."""
        if self._one_file:
            self._require_file()  # -p is refused when a store file is opened: it is one store
            return
        with self.refusals():
            profiles.require(profile or self.profile, self.home, given_home=self.home is not None,
                             url=self.server, command=None if self.server is None else self._bare_command)

    def open(self, profile: str | None = None, *, create: bool = False, embedder: str | None = None) -> Store:
        """Open the store (with `embedder`, else $SESSIONDB_EMBEDDER's); a profile is never
        created by a typo, only when `create` says so."""
        if not create:
            self.require_profile(profile)
        with self.refusals():
            return open_store(**self.where(profile), **({} if embedder is None else {"embedder": embedder}))

    def _require_file(self) -> None:
        """A store file named by --store (or $SESSIONDB_URL) must exist, as a profile must:
        a mistyped path is refused rather than becoming an empty store."""
        with self.refusals():
            require_store_file(self.store, f"an import creates a new store file (`{self._bare_command} sessions "
                                           "import FILE`, or `import --from TOOL`)")

    @contextmanager
    def importing(self, *, dry_run: bool = False) -> Iterator[Store]:
        """The store an import writes into, or (`dry_run`) checks what it would write
        against. A store that does not exist yet (a new profile, a new store file) is
        checked against an empty store in memory, so a dry run makes nothing; it is made
        for an import that writes, and a new profile is deleted again if that import is
        refused."""
        new = not self.profile_exists(self.profile)
        if new and dry_run:
            with self.refusals(), open_store(EMPTY) as empty:
                yield empty
            return
        try:
            with self.open(create=True) as store:
                yield store
        except click.ClickException:
            if new and not self._one_file:
                self.delete_profile(self.profile)
            raise

    def where(self, profile: str | None = None) -> dict[str, str | None]:
        """The store chosen, as open_store's and open_doctor's arguments."""
        place = {"home": self.home} if self.store is None else {"location": self.store}
        return {**place, "profile": profile or self.profile}

    def list_profiles(self) -> list[str]:
        with self.refusals():
            return profiles.list_profiles(self._home_of_profiles, url=self.server)

    def profile_exists(self, profile: str | None) -> bool:
        """Whether the profile's store exists (for --store naming one store, that store)."""
        if self._one_file:
            with self.refusals():
                place = locate(self.store)
            return place.kind != "sqlite" or place.target.exists()
        with self.refusals():
            return profiles.exists(profile, self._home_of_profiles, url=self.server)

    def create_profile(self, profile: str) -> str:
        with self.refusals():
            return profiles.create(profile, self._home_of_profiles, url=self.server)

    def delete_profile(self, profile: str) -> str:
        with self.refusals():
            return profiles.delete(profile, self._home_of_profiles, url=self.server)

    @property
    def _one_file(self) -> bool:
        """--store (or $SESSIONDB_URL) names one store file, not a server's profiles."""
        return self.store is not None and self.server is None

    @property
    def _home_of_profiles(self) -> str | None:
        if self._one_file:
            raise CliError(f"{self.store} is one store file: profiles are a home's (--home) or a server's "
                           "(--store URL)", "invalid_input")
        return self.home

    @property
    def _shown_store(self) -> str:
        return shown_location(self.store) if self.server is not None else str(self.store)

    @property
    def _bare_command(self) -> str:
        return f"sessiondb --store '{self._shown_store}'" if self.store_given else "sessiondb"

    def respelled(self, text: str) -> str:
        """`text` with the commands it names for this store spelled as this invocation
        spelled the store (a --store typed here is repeated)."""
        if not self.store_given:
            return text
        plain = command_for(self.profile, None)
        return text.replace(f"`{plain} ", f"`{self.command} ")

    def spelled(self, text: str) -> str:
        """`text`, whose plain `sessiondb ...` commands are the library's words, with each
        command spelled for this store (its --home or --store, and -p)."""
        return text.replace("`sessiondb ", f"`{self.command} ")

    def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a library call on an open store; a refusal becomes one line of guidance, exit 1."""
        try:
            return method(*args, **kwargs)
        except SessionDBError as exc:
            # a store method, a tool over a store (its `store`), or a function of a store
            owner = getattr(method, "__self__", None) or args[0]
            store = getattr(owner, "store", owner)
            advice = for_error(exc, db_path=store.location, profile=store.profile,
                               home=None if self.home is None else Path(self.home))
            raise self.error(exc, advice.message, advice.cause, advice.detail) from None

    @contextmanager
    def refusals(self) -> Iterator[None]:
        """A SessionDBError raised inside becomes a CliError (its own message, exit 1)."""
        try:
            yield
        except SessionDBError as exc:
            raise self.error(exc, " ".join(str(exc).split())) from None

    def error(self, exc: SessionDBError, message: str, cause: Any = None, detail: Any = "") -> CliError:
        cause = classify(exc) if cause is None else cause
        told = isinstance(exc, StorageError) and exc.detail is not None  # already says this store (guidance.tell)
        if message in (str(exc), " ".join(str(exc).split())) and not told \
                and not isinstance(exc, profiles.NoSuchProfile):
            # The library's own words name plain `sessiondb` commands (a missing profile's
            # advice already names the command that creates it for this store).
            message = self.spelled(message)
        if isinstance(exc, StoreHeld):
            detail = {"holders": [str(h) for h in exc.holders]}
        return CliError(message, error_code(exc, cause), detail)


def require_store_file(location: str, how_to_make: str) -> None:
    """Refuse a store file's location (a path or a `sqlite:` URL) where no store is,
    saying `how_to_make` one; a server's URL is never refused here."""
    place = locate(location)
    if place.kind == "sqlite" and not place.target.exists():
        raise CliError(f"no store at {place.target}: check the path; {how_to_make}", "not_found")


@contextmanager
def completing(click_ctx: click.Context, *, profile: bool = True) -> Iterator[CliContext | None]:
    """For shell completion: the CliContext the command line typed so far names (its
    --home, --store and, with `profile`, -p), or None when its store does not exist.
    Completion never creates a store and never fails: an error completes nothing."""
    root = click_ctx.find_root().params
    home, store = root.get("home"), root.get("store")
    ctx = CliContext(home=home, profile=root.get("profile") if profile else None, store=None if home else store)
    try:
        ctx.require_profile()
    except Exception:
        yield None
        return
    try:
        yield ctx
    except Exception:
        return  # suppressed: the caller's code after its `with` completes nothing


def complete_profile(click_ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion of -p: the profiles of the home (or server) the command line names."""
    with completing(click_ctx, profile=False) as ctx:
        if ctx is not None:
            return [name for name in ctx.list_profiles() if name.startswith(incomplete)]
    return []


def keep_old_name(group: click.Group, old: str, command: click.Command) -> None:
    """Serve `command` as `old` too, its name in the previous release, until the next one
    (docs/names.md): hidden from help, with a one-line note on stderr so stdout (and --json)
    reads exactly as under the new name."""
    def run(**kwargs: Any) -> Any:
        click.echo(f"note: `{group.name} {old}` is now `{group.name} {command.name}`; "
                   "the old name goes in the next release", err=True)
        return command.callback(**kwargs)

    group.add_command(click.Command(old, params=command.params, callback=run, help=command.help, hidden=True,
                                    context_settings=command.context_settings))
