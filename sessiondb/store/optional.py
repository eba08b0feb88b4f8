"""The optional capabilities: what not every backend has, each a protocol of its own.

A store offers a capability's methods only when its backend has it (store/capabilities.py
composes the store's class); ask with isinstance(). The core every backend has is the
Store protocol in store/contract.py.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, runtime_checkable

from ..model import MaintenanceReport, Session

@runtime_checkable
class Maintainable(Protocol):
    """Backup and the maintenance that rewrites a store (S-19)."""

    def backup(self, destination: str) -> int:
        """Write a consistent copy of the store to a new file while writers run; returns its size.

        Never a plain copy of the live file. The copy is a new generation: copied back over
        a live store, it is recognised as a replacement.
        """

    def optimize(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        """Merge the search index, refresh statistics, checkpoint.

        Like vacuum: refused with StoreHeld (listing every holder) while another
        process holds the store, unless forced; a dry run is never refused (S-19).
        """

    def vacuum(self, *, force: bool = False, dry_run: bool = False) -> MaintenanceReport:
        """Rewrite the store compactly (refused while held, like optimize)."""


@runtime_checkable
class Doctor(Protocol):
    """Examination and in-place repair of one store, without opening it as a store (a
    damaged store must not get a writer). `sessiondb.open_doctor` returns one."""

    @property
    def location(self) -> str:
        """The store examined."""

    def examine(self, *, deep: bool = False) -> Any:
        """A report (`damage`, `healthy`, `steps`, `to_dict()`); never writes. `deep` runs
        the full integrity check however long it takes."""

    def repair(self, *, deep: bool = False) -> Any:
        """Heal what can be healed in place, after a forensic backup, within the repair
        budget; refused (StoreHeld) while any other process holds the store (S-20..S-22)."""

    def holders(self) -> list[Any]:
        """The other processes holding the store now."""


@runtime_checkable
class Captures(Protocol):
    """The commits a store file's processes set aside when the file was changed underneath
    (a deleted WAL, a replaced file), read without touching the live store (S-14, S-28,
    S-49). `sessiondb.restore_captured` brings them back; a doctor has this when its
    backend keeps such captures."""

    @property
    def spool_anchor(self) -> Any:
        """The path whose directory holds the store's spool (store/spool.py)."""

    def captures(self) -> list[dict[str, Any]]:
        """Each capture: `capture` (its name), `cause`, `generation` (of the file its commits
        were written for, or None), `bytes`, `restored` (where and when it was brought back, or None)."""

    def read_capture(self, capture: str, directory: str) -> list[Any]:
        """Salvage what the capture holds into new stores in `directory`, each read a
        different way; a recover report for each (its `output` names the store)."""

    def mark_restored(self, capture: str, record: Mapping[str, Any]) -> None:
        """Record that the capture was brought back (the doctor then stops naming it)."""


@runtime_checkable
class Salvageable(Protocol):
    """Recovery of a damaged store into a new one, never touching the source (S-23)."""

    def recover(self, output: str | None, *, inspect_only: bool = False) -> Any:
        """Rebuild what is readable into `output` (a new store); report kept and lost."""


# The gateway's routing index.
#
# Only the store a gateway runs on keeps entries in its routing index (S-32), and the
# gateway looks a key's session up in its owner's store. A store that offers it is
# `Routable` (every store over a `Backend` is: the index is rows, store/routing.py); the
# gateway asks with isinstance and refuses a store without it.


@runtime_checkable
class RouteEntry(Protocol):
    """One routing entry: which session serves a key, the profile that owns it, its turn state.

    `state` is one of `idle`, `running` (a turn is in flight), `resume_pending` (a turn was
    running when the process died) or `ended`.
    """

    @property
    def key(self) -> str: ...

    @property
    def session_id(self) -> str:
        """The session in the store of `profile`, not necessarily the index's own store."""

    @property
    def profile(self) -> str: ...

    @property
    def state(self) -> str: ...

    @property
    def turn_started_at(self) -> float | None: ...

    @property
    def updated_at(self) -> float: ...

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (JSON-ready)."""


@runtime_checkable
class RoutingIndex(Protocol):
    """The key → session index and the lookups a gateway runs on a key's owner store.

    Writes are single-entry and never touch a session row, so a routing write never moves
    `last_activity_at` (S-08). Bad input (an empty key, an unknown field or state) raises
    InvalidInput and writes nothing.
    """

    def get(self, key: str) -> RouteEntry | None:
        """The entry for `key`, or None."""

    def put(self, key: str, session_id: str, profile: str) -> RouteEntry:
        """Insert or rewrite the entry for `key`: a new session serves it, its turn `idle`."""

    def update(self, key: str, *, expect: Mapping[str, Any] | None = None, **changes: Any) -> RouteEntry | None:
        """Change the named fields of one entry and return it as it now is.

        None, and nothing written, if the entry is absent or any field named in `expect`
        differs from its stored value: a caller that read an entry never overwrites one a
        live writer changed since (S-33, S-37). `updated_at` is set unless given.
        """

    def entries(self, *, profile: str | None = None, states: tuple[str, ...] | None = None) -> list[RouteEntry]:
        """The entries, by key, optionally only those of `profile` and/or in one of `states`."""

    def live_by_key(self, key: str) -> Session | None:
        """The most recently active open session of this store whose session_key is `key`."""

    def legacy_by_peer(self, platform: str, chat_type: str, chat_id: str,
                       thread: str | None = None) -> Session | None:
        """The most recently active open, unkeyed session for the peer tuple, or None.

        `platform` matches the session's source. Only rows of this store's owner are
        adopted (S-36): a DM's chat id is the same for every bot.
        """


@runtime_checkable
class Routable(Protocol):
    """A store that can hold a gateway's routing index."""

    @property
    def routing(self) -> RoutingIndex:
        """This store's routing index and key/peer lookups."""
