"""What every command shares: the chosen home and profile, and how to open their store."""

from __future__ import annotations

from dataclasses import dataclass

import click

from .. import open_store
from ..errors import SessionDBError
from ..store.contract import Store


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
