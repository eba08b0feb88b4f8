"""The store from the key (S-30, S-31): which store owns a session key, opened lazily.

Ownership is three-valued. The default profile (`main`) is the gateway's own store,
`<home>/state.db`, which also holds the routing index (S-32). A named profile whose home
directory `<home>/profiles/NAME/` exists is that profile's store. A named profile without
a home, or a name that is not a valid profile, has no store: `resolve` raises
OwnerUnavailable and the caller keeps the write waiting. A miss is never cached, so a
profile created while the gateway runs is found at the next attempt; nothing here creates
a profile's directory.

The gateway needs more of a store than the core contract: the routing capability
(`Routable`, store/contract.py). Every store is checked once, when it is opened; one
without it is refused with NoRoutingIndex, which is not a reason to wait.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol

from .. import open_store
from ..errors import InvalidInput, NotASessionStore, SessionDBError, StorageError, StoreClosed
from ..home import DEFAULT_PROFILE, profile_dir, validate_profile
from ..keys import SessionKey
from ..store.contract import Store
from ..store.optional import Routable, RoutingIndex

#: Failures that make a write wait in the queue rather than reach the caller.
DEFERRABLE = (StorageError, NotASessionStore, StoreClosed)


class OwnerUnavailable(StorageError):
    """The key's owner has no store (yet): its home is absent or its name is not a profile."""


class NoRoutingIndex(SessionDBError):
    """The store's backend offers no routing index, which a gateway needs of every store it uses."""


class GatewayStore(Store, Routable, Protocol):
    """What a gateway uses of a store: the contract and the routing index."""


class Owners:
    """One lazily opened store handle per profile; `close` releases them all."""

    def __init__(self, home: Path, *, patience: float, durability: str = "full",
                 multiplex_profiles: bool = True) -> None:
        self.home = home
        self.patience = patience
        self.durability = durability
        self.multiplex_profiles = multiplex_profiles
        self._lock = threading.Lock()
        self._stores: dict[str, GatewayStore] = {}
        self._closed = False

    def root(self) -> GatewayStore:
        """The gateway's own store (the default profile's)."""
        return self._open(DEFAULT_PROFILE)

    def index(self) -> RoutingIndex:
        """The one routing index: the gateway's own store's, whatever profile a key names (S-32)."""
        return self.root().routing

    def resolve(self, key: SessionKey) -> GatewayStore:
        """The store that owns `key`, or OwnerUnavailable; never the root store for a named owner."""
        profile = key.profile
        if profile == DEFAULT_PROFILE:
            return self.root()
        if not self.multiplex_profiles:
            raise InvalidInput(f"this gateway serves only the {DEFAULT_PROFILE} profile, not {profile!r}")
        try:
            validate_profile(profile)
        except InvalidInput:
            raise OwnerUnavailable(f"{profile!r} is not a valid profile name; the write waits") from None
        with self._lock:
            store = self._stores.get(profile)
        if store is not None:
            return store
        if not profile_dir(self.home, profile).is_dir():
            raise OwnerUnavailable(f"profile {profile!r} has no home at {profile_dir(self.home, profile)} yet")
        return self._open(profile)

    def _open(self, profile: str) -> GatewayStore:
        with self._lock:
            if self._closed:
                raise StorageError("the gateway is closed")
            store = self._stores.get(profile)
            if store is None:
                opened = open_store(home=self.home, profile=profile, patience=self.patience,
                                    durability=self.durability)
                if not isinstance(opened, Routable):
                    refusal = NoRoutingIndex(f"the gateway needs a store with a routing index; the store at "
                                             f"{opened.location} ({type(opened).__name__}) has none")
                    opened.close()
                    raise refusal
                store = self._stores[profile] = opened
            return store

    def forget(self, profile: str) -> None:
        """Close the handle on a profile's store whose file was replaced underneath (S-13,
        S-28): it would refuse every write; the next one opens the file now at the path."""
        with self._lock:
            store = self._stores.pop(profile, None)
        if store is not None:
            store.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            stores, self._stores = list(self._stores.values()), {}
        for store in stores:
            store.close()
