"""The optional capabilities of a store, checked like the core, offered only where they exist.

A store's class is CheckedStore plus one mixin per capability its backend has
(`checked_store`), so `isinstance(store, Maintainable)` tells the truth and a backend
without maintenance gives a store without those methods, never one whose methods fail.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from ..errors import InvalidInput
from ..inputs import check_flag
from ..model import MaintenanceReport
from .backend import Backend, MaintenanceBackend
from .checked import CheckedStore, naming_the_store
from .optional import Doctor, Maintainable, RoutingIndex, Salvageable
from .routing import RoutingTable

__all__ = ["Doctor", "Maintainable", "Salvageable", "checked_store"]


@naming_the_store
class CheckedMaintenance:
    """Maintainable (contract.py) over a MaintenanceBackend."""

    _open: Callable[[], MaintenanceBackend]
    _clock: Callable[[], float]

    def backup(self, destination: str | os.PathLike[str]) -> int:
        if not isinstance(destination, (str, os.PathLike)):
            raise InvalidInput(f"the backup destination must be a path, not {type(destination).__name__}")
        given = os.path.expanduser(os.fspath(destination))
        if os.path.lexists(given):  # a symlink too: a backup never goes where a planted link points
            raise InvalidInput(f"{given} already exists; choose a new file for the backup")
        return self._open().backup(Path(os.path.realpath(given)))

    def optimize(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        return self._open().optimize(force=check_flag(force, "force"), dry_run=check_flag(dry_run, "dry_run"))

    def vacuum(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        return self._open().vacuum(force=check_flag(force, "force"), dry_run=check_flag(dry_run, "dry_run"))


class CheckedRouting:
    """The gateway's routing index (optional.Routable): rows of every backend
    (store/routing.py), so every store offers it."""

    _open: Callable[[], Backend]
    _profile: str | None
    _clock: Callable[[], float]

    @property
    def routing(self) -> RoutingIndex:
        return RoutingTable(self._open(), self._profile, self._clock)


_MIXINS: tuple[tuple[type, type], ...] = (
    (MaintenanceBackend, CheckedMaintenance),
)


@lru_cache(maxsize=None)
def _store_class(mixins: tuple[type, ...]) -> type[CheckedStore]:
    if not mixins:
        return CheckedStore
    return type("Store", (CheckedStore, *mixins), {"__doc__": CheckedStore.__doc__})


def checked_store(backend: Backend, *, profile: str | None, **options: Any) -> CheckedStore:
    """The public store over `backend`: the core contract and each capability it has
    (options: CheckedStore's clock, limits and replay_spool)."""
    mixins = (CheckedRouting, *(mixin for capability, mixin in _MIXINS if isinstance(backend, capability)))
    return _store_class(mixins)(backend, profile=profile, **options)
