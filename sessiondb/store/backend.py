"""What a backend implements: primitives on typed commands, and the optional capabilities.

The public contract (`store/contract.py`) is served by `store/checked.py`, which validates
every call once and hands a backend only typed commands (`store/commands.py`) and checked
ids. A backend is a small set of primitives over its storage: it does not validate input,
spool, account imports or shape model-ready messages. Errors it raises are sessiondb
errors (its driver's errors are converted at its boundary).

Every rule a user can observe is a unit of work over `Rows` in the neutral layer
(store/lineage.py, compaction.py, sessions.py, usage.py, turn_rows.py,
routing.py, transfer.py, verify.py) that a backend runs with `write`, `read` and
`stream`; the methods after them are what only an engine can do: its derived indexes,
its size and its own integrity checks.

Optional capabilities are separate protocols: the neutral layer offers the matching
public protocol (maintenance, its own way to run appends) only on stores whose
backend has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol, TypeVar, runtime_checkable

from ..model import Message, SearchHit, VerifyReport
from . import commands as cmd
from .rows import Rows

T = TypeVar("T")


@dataclass
class Traces:
    """Where a backend's engine may still keep rows it deleted, after `Backend.scrub`.

    `owned`: the files it writes and has just scrubbed, each with what to do should one
    still hold erased text; `copies`: copies it made that it does not rewrite (backups,
    captures), each with the command that removes one; `disposable`: copies whose every
    row the store holds too (a capture already brought back), removed when they hold
    erased text; `notes`: what the engine keeps beyond any file sessiondb owns, in a
    sentence each."""

    owned: list[tuple[Path, str]] = field(default_factory=list)
    copies: list[tuple[Path, str]] = field(default_factory=list)
    disposable: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """The primitives every backend implements (one handle on one store)."""

    location: str  # a path, or an address without secrets
    spool_anchor: Path  # refused batches are kept in `<anchor's directory>/spool/`
    # Optional: `generation`, the identity of the store this handle opened (a file's
    # generation stamp); a batch it refused is spooled with it and replayed only into the
    # same generation. A backend without one leaves it out.
    # Optional: `patience`, the seconds a backend may run a unit of work again after a broken
    # connection; a record_usage call's id is kept for twice that at least (store/usage.py).

    def close(self) -> None: ...

    # rows in and out (store/rows.py): every rule of the neutral layer is a unit of work on these
    def write(self, work: Callable[[Rows], T]) -> T:
        """Run `work` in one write transaction and return what it returns. It sees its own
        writes; none is seen by others before it returns; if it raises, nothing it wrote is
        kept. A backend may run it again from the start (after a broken connection, say),
        so `work` changes nothing but its rows and reads any clock inside."""

    def read(self, work: Callable[[Rows], T]) -> T:
        """Run `work` in one read transaction: one consistent snapshot throughout."""

    def stream(self, work: Callable[[Rows], Iterator[T]]) -> Iterator[T]:
        """What `work` yields (a generator over the rows), read in one snapshot held until
        it is exhausted or closed: a read too large to hold at once (an export) pages
        through its rows with `select(order=, limit=)` and `above()` and hands each page on.
        Never re-run: the caller may already hold some of what it yielded."""

    # the derived indexes, size, integrity: what only the engine can do
    def search(self, query: cmd.Search) -> list[SearchHit]: ...
    def recall(self, query: cmd.Search) -> list[SearchHit]:
        """The best messages for a question (query.query is a recall.Recall), best first:
        any of its words over a stemmed words index, ranked by bm25, fused (recall.fuse)
        with the messages nearest its meaning where it has one (the vectors computed by the
        embedder the backend was opened with, caught up first; where they cannot be used,
        each hit's note says why); caught up like search."""
    def rebuild_vectors(self) -> int:
        """Drop the store's vectors, whichever embedder computed them, and compute them all
        again with this handle's embedder; returns how many messages have one. Raises
        embedding.EmbedderFailed when the embedder does."""
    def scrub(self) -> Traces:
        """After rows were deleted to be forgotten (store/forgetting.py): overwrite what the
        engine still keeps of them (freed pages, its write-ahead log, its derived indexes),
        without stopping other processes' writes for longer than one transaction, and say
        where copies may remain, for the scan that follows."""
    def release_space(self) -> int:
        """Hand the pages that deletions freed back to the file system, a few at a time
        beside writers (never a rewrite that needs the store to itself); the bytes handed
        back (0 where the engine keeps freed space for its own reuse)."""
    def footprint(self) -> tuple[int, int]:
        """The store's size in bytes, and of that what a write-ahead log of its own holds (0
        when it has none), for stats (the counts are rows, store/sessions.py)."""

    def check(self, logical: Callable[[Rows, int, VerifyReport], None]) -> VerifyReport:
        """Store.verify() in one snapshot: what only the engine can check (its file or
        pages, the derived search index, its settings) and `logical(rows, tokens, report)`,
        the checks over rows (store/verify.py), given how many fencing tokens the store has
        handed out. A file too damaged to read leaves the rows unchecked, with a note."""


@runtime_checkable
class AppendingBackend(Protocol):
    """A backend that runs appends its own way (the public append, checked.py, uses it when given)."""

    def write_append(self, command: cmd.Append, work: Callable[[Rows], list[Message]]) -> list[Message]:
        """Store `command` as `write(work)` would (`work` is the append of it as one unit of
        work), or by a way of its own that stores the same rows and returns the same messages:
        `work` run together with concurrent appends in one transaction (each in a savepoint
        of its own, so one's refusal takes back only its rows), or the common case in one
        statement. Acknowledged only once committed."""


@runtime_checkable
class ReplicatedBackend(Protocol):
    """A backend with read replicas (PostgreSQL: postgres/replicas.py)."""

    def read_nearby(self, work: Callable[[Rows], T]) -> T:
        """`read(work)`, or the same read on a replica that has replayed every write this
        handle acknowledged (a listing: what the caller wrote is always in it)."""


@runtime_checkable
class MaintenanceBackend(Protocol):
    """Backup and the rewrites that refuse while other processes hold the store (S-19)."""

    def backup(self, destination: Path) -> int: ...
    def optimize(self, *, force: bool, dry_run: bool) -> Any: ...  # MaintenanceReport
    def vacuum(self, *, force: bool, dry_run: bool) -> Any: ...


#: How a backend kind opens a handle: (target, profile, options) -> Backend.
Opener = Callable[..., Backend]
