"""What every command shares: the chosen home and profile, how to open their store, and
how a refusal becomes one line (or, with --json, one JSON object) and exit status 1."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import click

from .. import open_store, profiles
from ..errors import SessionDBError, StoreHeld, classify
from ..guidance import command_for, error_code, for_error
from ..store.contract import Store

T = TypeVar("T")


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

    @property
    def command(self) -> str:
        """`sessiondb` as this invocation spelled its store: with --home and -p when given."""
        return command_for(self.profile, None if self.home is None else Path(self.home))

    def require_profile(self, profile: str | None = None) -> None:
        """Refuse, saying how to create it, a named profile that does not exist."""
        with self.refusals():
            profiles.require(profile or self.profile, self.home, given_home=self.home is not None)

    def open(self, profile: str | None = None, *, create: bool = False) -> Store:
        """Open the store; a profile is never created by a typo, only when `create` says so."""
        if not create:
            self.require_profile(profile)
        with self.refusals():
            return open_store(home=self.home, profile=profile or self.profile)

    def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a library call on an open store; a refusal becomes one line of guidance, exit 1."""
        try:
            return method(*args, **kwargs)
        except SessionDBError as exc:
            # a store method, a tool over a store (its `store`), or a function of a store
            owner = getattr(method, "__self__", None) or args[0]
            store = getattr(owner, "store", owner)
            advice = for_error(exc, db_path=Path(store.location), profile=store.profile,
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
        if message in (str(exc), " ".join(str(exc).split())) and not isinstance(exc, profiles.NoSuchProfile):
            # The library's own words name plain `sessiondb` commands; say them for this
            # store (a missing profile's advice already names the command that creates it).
            message = message.replace("`sessiondb ", f"`{self.command} ")
        if isinstance(exc, StoreHeld):
            detail = {"holders": [str(h) for h in exc.holders]}
        return CliError(message, error_code(exc, cause), detail)
