"""What every command shares: the chosen home and profile, and how to open their store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

import click

from .. import open_store
from ..errors import SessionDBError
from ..guidance import for_error
from ..store.contract import Store

T = TypeVar("T")


@dataclass
class CliContext:
    home: str | None
    profile: str | None

    def open(self, profile: str | None = None) -> Store:
        """Open the store, turning a refusal into a one-line error and exit status 1."""
        try:
            return open_store(home=self.home, profile=profile or self.profile)
        except SessionDBError as exc:
            raise click.ClickException(str(exc)) from None

    def call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a library call on an open store; a refusal becomes one line of guidance, exit 1."""
        try:
            return method(*args, **kwargs)
        except SessionDBError as exc:
            store = getattr(method.__self__, "store", method.__self__)  # a store, or a tool over one
            advice = for_error(exc, db_path=Path(store.location), profile=store.profile,
                               home=None if self.home is None else Path(self.home))
            raise click.ClickException(advice.message) from None
