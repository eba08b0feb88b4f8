"""One AsyncStore per profile under the home (or on the server `url` names), opened on
first use and closed at shutdown.

A profile named in a request is validated (home.validate_profile) before it becomes a
path; a named profile is served only if its directory exists under `<home>/profiles/`
(or its store on the server: the service never creates profiles). `main` is the store
in the home itself (the server's default store).
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from pathlib import Path

from .. import open_store
from ..profiles import exists, list_profiles
from ..errors import NotFound
from ..home import DEFAULT_PROFILE, STORE_FILENAME, profile_dir, validate_profile
from ..store.aio import AsyncStore
from ..store.locations import shown_location


class Stores:
    """The stores of one home (or of one server), by profile name."""

    def __init__(self, home: Path, url: str | None = None) -> None:
        self.home = home
        self.url = url
        self._open: dict[str, AsyncStore] = {}
        self._lock = asyncio.Lock()

    def name(self, profile: str | None) -> str:
        """The canonical profile name; InvalidInput for a malformed one."""
        if profile is None or profile == "":
            return DEFAULT_PROFILE
        return validate_profile(profile)

    @property
    def shown(self) -> str:
        """What the service serves: the home, or the server (no password)."""
        return str(self.home) if self.url is None else shown_location(self.url)

    def path(self, profile: str | None) -> Path | str:
        """The store file of a profile, or the server holding it (validated; NotFound for a
        profile that does not exist)."""
        name = self.name(profile)
        if self.url is not None:
            if not exists(name, url=self.url):
                raise NotFound(f"no profile {name!r} on {self.shown}; the profiles are listed at /api/profiles")
            return self.shown
        directory = profile_dir(self.home, name)
        if name != DEFAULT_PROFILE and not directory.is_dir():
            raise NotFound(f"no profile {name!r} under {self.home}; the profiles are listed at /api/profiles")
        return directory / STORE_FILENAME

    def profiles(self) -> list[str]:
        """`main`, then every named profile under the home (or on the server), sorted."""
        return list_profiles(self.home, url=self.url)

    def where(self, name: str) -> dict:
        """A profile's store, as open_store's and open_doctor's arguments."""
        place = {"home": self.home} if self.url is None else {"location": self.url}
        return {**place, "profile": None if name == DEFAULT_PROFILE else name}

    async def get(self, profile: str | None) -> AsyncStore:
        """The profile's AsyncStore, opened once (off the event loop) and then shared."""
        name = self.name(profile)
        store = self._open.get(name)
        if store is not None:
            return store
        await asyncio.to_thread(self.path, name)
        async with self._lock:
            store = self._open.get(name)
            if store is None:
                sync = await asyncio.to_thread(lambda: open_store(**self.where(name)))
                store = self._open[name] = AsyncStore(sync)
            return store

    @asynccontextmanager
    async def released(self, name: str):
        """Close the profile's handle and keep it closed (no store is opened meanwhile), so
        a repair finds no connection of this process on the file; reopened on next use."""
        async with self._lock:
            store = self._open.pop(name, None)
            if store is not None:
                await store.close()
            yield

    async def close(self) -> None:
        async with self._lock:
            stores, self._open = list(self._open.values()), {}
        for store in stores:
            await store.close()
