"""Checkpoints and rollback of an agent's working tree (S-53).

Before the agent's first change in a turn, the tree is snapshotted: each file's content
into the content-addressed object store (sessiondb.snapshots), the list of files into a manifest
numbered per session. `diff` compares a checkpoint with the tree now; `restore` puts it
back, after taking a checkpoint of the tree as it is, and refuses (listing every file)
when a file it would overwrite or delete was changed since the agent's own last write:
the post-write ledger keeps the hash of each file as the agent's tools left it, so a
person's edit made since is never clobbered unless forced.

Every call first classifies where the agent's tools run, from the backend configured now
(environments.py): in a container or over ssh there is no snapshot, no ledger entry,
and diff and restore raise CheckpointRefused with the reason, the same words on every
surface.
"""

from __future__ import annotations

import difflib
import glob
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import CheckpointRefused, InvalidInput, NotFound
from ..store.contract import Store
from ..snapshots import ROOT_NAME, Objects, digest, read_json, write_json
from ..store.spool import spool_dir
from . import trees
from .environments import METADATA_KEY, Environment, classify
from .trees import Limits

log = logging.getLogger("sessiondb.turns")

_LEDGER = "ledger.json"


@dataclass(frozen=True)
class Checkpoint:
    id: str
    session_id: str
    tree: str
    created_at: float
    label: str
    turn_id: str | None
    files: dict[str, dict[str, Any]]  # relative path -> sha256, size, mode
    skipped: dict[str, str]  # relative path -> why it was not snapshotted

    def to_dict(self, *, files: bool = False) -> dict[str, Any]:
        out = asdict(self)
        if not files:
            out["files"], out["skipped"] = len(self.files), len(self.skipped)
        return out


@dataclass(frozen=True)
class FileChange:
    path: str
    change: str  # added, removed or modified (the tree now against the checkpoint)
    patch: str | None = None  # a unified diff, for text on both sides


@dataclass(frozen=True)
class Diff:
    checkpoint: str
    tree: str
    changes: list[FileChange]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FileRestore:
    path: str
    action: str  # write (back to the checkpoint's content) or delete (created since)
    status: str  # restored, deleted, refused, or would_restore when nothing was written
    reason: str | None = None


@dataclass
class RestoreReport:
    checkpoint: str
    tree: str
    forced: bool
    files: list[FileRestore] = field(default_factory=list)
    checkpoint_before: str | None = None  # the tree as it was before the restore

    @property
    def restored(self) -> bool:
        return self.checkpoint_before is not None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "restored": self.restored}


class Checkpoints:
    """Checkpoints of the sessions of one store.

    `backend` is where the agent's tools run: a name, a function returning the name
    configured now, or None to read the session's `terminal_backend` metadata at each call
    (unset: local). `root` defaults to `checkpoints/` beside the store file.
    """

    def __init__(self, store: Store, *, root: str | os.PathLike[str] | None = None,
                 backend: str | Callable[[], str] | None = None, limits: Limits = Limits(),
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.root = Path(root) if root is not None else Path(store.location).parent / ROOT_NAME
        self.objects = Objects(self.root)
        # sessiondb's own files are never a tree's: the checkpoints, and the store's
        # directory (its files and spool, by name, when that directory is the tree itself).
        self._store_file = Path(os.path.realpath(store.location)) if os.path.isabs(store.location) else None
        self._dirs = (Path(os.path.realpath(self.root)),) + (() if self._store_file is None else (
            self._store_file.parent, spool_dir(self._store_file)))
        self.limits = limits
        self._backend = backend
        self._clock = clock
        self._lock = threading.Lock()  # one ledger or manifest update at a time in this process
        self._by_turn: dict[str, Checkpoint] = {}

    def _own(self) -> tuple[Path, ...]:
        """sessiondb's own files: the checkpoints, the store's directory and spool, and every
        file named after the store (its sidecars, ledgers and records, whatever they are now)."""
        if self._store_file is None:
            return self._dirs
        siblings = tuple(p for p in self._store_file.parent.glob(f"{glob.escape(self._store_file.name)}*"))
        return self._dirs + siblings

    # --- where the tools run -----------------------------------------------------------------

    def environment(self, session_id: str) -> Environment:
        """Where the session's tools run, classified from the backend configured now."""
        session = self.store.get_session(session_id)  # NotFound for an unknown session
        backend = self._backend() if callable(self._backend) else self._backend
        return classify(backend if backend is not None else session.metadata.get(METADATA_KEY))

    def _on_host(self, session_id: str, what: str) -> None:
        env = self.environment(session_id)
        if not env.on_host:
            raise CheckpointRefused(f"{what} refused: {env.refusal}")

    # --- taking them ---------------------------------------------------------------------------

    def before_mutation(self, session_id: str, tree: str | os.PathLike[str], *,
                        turn_id: str | None = None) -> Checkpoint | None:
        """Snapshot the tree before the agent changes it: once per turn, never in a container
        (None then, and the reason is logged)."""
        env = self.environment(session_id)
        if not env.on_host:
            log.info("no checkpoint for session %s: %s", session_id, env.refusal)
            return None
        if turn_id is not None and turn_id in self._by_turn:
            return self._by_turn[turn_id]
        checkpoint = self._take(session_id, trees.resolve_tree(tree), "before the agent's changes", turn_id)
        if turn_id is not None:
            self._by_turn[turn_id] = checkpoint
        return checkpoint

    def take(self, session_id: str, tree: str | os.PathLike[str], *, label: str = "taken by hand") -> Checkpoint:
        self._on_host(session_id, "a checkpoint")
        return self._take(session_id, trees.resolve_tree(tree), label, None)

    def _take(self, session_id: str, tree: Path, label: str, turn_id: str | None) -> Checkpoint:
        found = trees.scan(tree, self.limits, exclude=self._own())
        with self.objects.exclusive():  # its contents and its manifest, between two removals
            return self._written(session_id, tree, label, turn_id, found)

    def _written(self, session_id: str, tree: Path, label: str, turn_id: str | None, found: trees.Scan) -> Checkpoint:
        files = {rel: {"sha256": self.objects.put(content), "size": len(content), "mode": mode}
                 for rel, (content, mode) in found.files.items()}
        with self._lock:
            existing = self.list(session_id)
            latest = existing[-1] if existing else None
            if latest is not None and (latest.tree, latest.files, latest.skipped) == (str(tree), files,
                                                                                        found.skipped):
                return latest  # nothing changed since: the latest checkpoint already is this tree
            number = int(latest.id) + 1 if latest is not None else 1
            while True:
                checkpoint = Checkpoint(str(number), session_id, str(tree), self._clock(), label, turn_id, files,
                                        found.skipped)
                try:
                    write_json(self._manifest(session_id, checkpoint.id), asdict(checkpoint), exclusive=True)
                    return checkpoint
                except FileExistsError:  # another process numbered one meanwhile
                    number += 1

    def record_write(self, session_id: str, path: str | os.PathLike[str]) -> None:
        """After the agent's tool wrote (or deleted) `path`: keep the hash it left (not in a container)."""
        if not self.environment(session_id).on_host:
            return
        real = os.path.realpath(os.fspath(path))
        try:
            with open(real, "rb") as f:
                sha: str | None = digest(f.read())
        except FileNotFoundError:
            sha = None
        with self._lock:
            ledger = self._ledger(session_id)
            ledger[real] = sha
            write_json(self.objects.session_dir(session_id) / _LEDGER, ledger)

    # --- reading them --------------------------------------------------------------------------

    def list(self, session_id: str) -> list[Checkpoint]:
        self.store.get_session(session_id)
        directory = self.objects.session_dir(session_id)
        numbers = sorted(int(p.stem) for p in directory.glob("*.json") if p.stem.isdigit())
        return [self._load(session_id, str(n)) for n in numbers]

    def get(self, session_id: str, checkpoint_id: str) -> Checkpoint:
        self.store.get_session(session_id)
        if not isinstance(checkpoint_id, str) or not checkpoint_id.isdigit():
            raise InvalidInput(f"a checkpoint id is its number, not {checkpoint_id!r}")
        if not self._manifest(session_id, checkpoint_id).exists():
            raise NotFound(f"no checkpoint {checkpoint_id} of session {session_id!r}")
        return self._load(session_id, checkpoint_id)

    def diff(self, session_id: str, checkpoint_id: str) -> Diff:
        """What changed in the tree since the checkpoint (refused in a container)."""
        self._on_host(session_id, "a diff")
        checkpoint = self.get(session_id, checkpoint_id)
        tree = Path(checkpoint.tree)
        now = trees.scan(tree, self.limits, exclude=self._own())
        changes = []
        for rel in _changed(checkpoint, now):
            before = self.objects.get(checkpoint.files[rel]["sha256"]) if rel in checkpoint.files else None
            after = now.files[rel][0] if rel in now.files else None
            kind = "added" if before is None else "removed" if after is None else "modified"
            changes.append(FileChange(rel, kind, _patch(rel, before, after)))
        return Diff(checkpoint.id, checkpoint.tree, changes)

    # --- rollback ------------------------------------------------------------------------------

    def restore(self, session_id: str, checkpoint_id: str, *, force: bool = False) -> RestoreReport:
        """Put the tree back as the checkpoint has it.

        Refused (CheckpointRefused, nothing written, `report` listing every file) when a
        file it would overwrite or delete was changed since the agent's own last write,
        unless `force`. Otherwise a checkpoint of the tree as it is comes first.
        """
        if not isinstance(force, bool):
            raise InvalidInput(f"force must be true or false, not {force!r}")
        self._on_host(session_id, "a restore")
        checkpoint = self.get(session_id, checkpoint_id)
        tree = Path(checkpoint.tree)
        now = trees.scan(tree, self.limits, exclude=self._own())
        ledger = self._ledger(session_id)
        report = RestoreReport(checkpoint.id, checkpoint.tree, force)
        refused = False
        for rel in _changed(checkpoint, now):
            action = "write" if rel in checkpoint.files else "delete"
            if action == "write":  # every path is checked before anything is written
                trees.writable(tree, rel)
            else:
                trees.inside(tree, rel)
            current = digest(now.files[rel][0]) if rel in now.files else None
            key = str(tree / rel)
            if key not in ledger:
                why = "changed since the checkpoint, not by the agent's tools"
            elif ledger[key] != current:
                why = "changed since the agent's last write"
            else:
                why = None
            refused |= why is not None
            report.files.append(FileRestore(rel, action, "refused" if why and not force else "would_restore", why))
        if refused and not force:
            raise CheckpointRefused(
                f"restore of checkpoint {checkpoint.id} refused: "
                + ", ".join(f"{f.path} ({f.reason})" for f in report.files if f.status == "refused")
                + "; nothing was written (force to overwrite them)", report)
        report.checkpoint_before = self._take(session_id, tree, f"before restoring checkpoint {checkpoint.id}",
                                              None).id
        for i, item in enumerate(report.files):
            if item.action == "write":
                entry = checkpoint.files[item.path]
                trees.write(tree, item.path, self.objects.get(entry["sha256"]), entry["mode"])
            else:
                trees.remove(tree, item.path)
            report.files[i] = FileRestore(item.path, item.action, "restored" if item.action == "write" else "deleted",
                                          item.reason)
            self.record_write(session_id, tree / item.path)
        return report

    # --- files ---------------------------------------------------------------------------------

    def _manifest(self, session_id: str, checkpoint_id: str) -> Path:
        return self.objects.session_dir(session_id) / f"{int(checkpoint_id):06d}.json"

    def _load(self, session_id: str, checkpoint_id: str) -> Checkpoint:
        return Checkpoint(**read_json(self._manifest(session_id, checkpoint_id)))

    def _ledger(self, session_id: str) -> dict[str, str | None]:
        path = self.objects.session_dir(session_id) / _LEDGER
        return read_json(path) if path.exists() else {}


def _changed(checkpoint: Checkpoint, now: trees.Scan) -> list[str]:
    """Paths whose content differs; a path skipped on either side is left alone."""
    paths = (set(checkpoint.files) | set(now.files)) - set(checkpoint.skipped) - set(now.skipped)
    return sorted(rel for rel in paths
                  if checkpoint.files.get(rel, {}).get("sha256") != (digest(now.files[rel][0]) if rel in now.files
                                                                     else None))


def _patch(rel: str, before: bytes | None, after: bytes | None) -> str | None:
    try:
        old = (before or b"").decode("utf-8").splitlines(keepends=True)
        new = (after or b"").decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None  # binary: the change is listed without a patch
    return "".join(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}"))
