"""Forensic backups taken before any repair touches a store (S-21). No backup, no surgery.

A backup is a *set*: the main file and every sidecar that exists (`-wal`, `-shm`,
`-journal`), copied byte for byte into `<store dir>/backups/` as

    state.db.forensic-<UTC time>-<pid>            the main file (published last)
    state.db.forensic-<UTC time>-<pid>-wal ...    its sidecars
    state.db.forensic-<UTC time>-<pid>.json       the manifest: sizes and SHA-256 of each

(a set taken in the same second as an earlier one of this process adds `-0002`, `-0003`...
to the stamp: no set ever replaces another).

The copies are first written under a staging name outside that prefix
(`.staging-<time>-<pid>-...`), fsynced, then renamed into place sidecars first, manifest
next, main file last, so a set whose main file exists is complete. A failure anywhere
removes everything of the set (staged and published). Before a new set is made, stale
staging debris and sets without a main file (an interrupted publish) are swept. A set
byte-identical to an existing one (the same SHA-256 for every file) is not stored twice:
the existing set is reused. Only the 3 newest sets are kept.

Free space is checked first: the copy needs its own size plus max(256 MiB, 2% of the
volume); when free space cannot be read the backup is refused (fails closed).

The live files are read with plain file I/O only when this process holds no descriptor on
them (S-12): the caller (repair) refuses to run while any connection of this process or
any other process holds the store, so nothing here can drop a lock.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ....errors import SessionDBError
from ....home import FILE_MODE, SIDECAR_SUFFIXES, ensure_private_dir, fsync_dir

BACKUP_DIR = "backups"
KEEP = 3
MIN_HEADROOM = 256 * 1024 * 1024
HEADROOM_FRACTION = 0.02
STAGING = ".staging-"

FreeSpace = Callable[[Path], "tuple[int, int] | None"]


class BackupRefused(SessionDBError):
    """No forensic copy could be made, so no repair may run."""


@dataclass
class BackupSet:
    name: str  # the main file's name in the backup directory
    directory: Path
    files: dict[str, str] = field(default_factory=dict)  # suffix ("" for main) -> sha256
    reused: bool = False

    @property
    def main(self) -> Path:
        return self.directory / self.name


def backup_dir(db_path: Path) -> Path:
    return db_path.parent / BACKUP_DIR


def statvfs_space(path: Path) -> tuple[int, int] | None:
    """(free bytes for this user, volume size), or None when it cannot be read."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize


def required_space(copy_bytes: int, volume_bytes: int) -> int:
    return copy_bytes + max(MIN_HEADROOM, int(volume_bytes * HEADROOM_FRACTION))


def list_sets(db_path: Path) -> list[Path]:
    """Complete backup sets (their main files), oldest first."""
    directory = backup_dir(db_path)
    if not directory.is_dir():
        return []
    prefix = f"{db_path.name}.forensic-"
    mains = [p for p in directory.iterdir()
             if p.name.startswith(prefix) and not p.name.endswith((".json",) + SIDECAR_SUFFIXES)]
    return sorted(mains, key=lambda p: p.name)


def take(db_path: Path, *, free_space: FreeSpace = statvfs_space) -> BackupSet:
    """Copy the store and its sidecars into a new (or an identical existing) backup set."""
    sources = [(s, Path(f"{db_path}{s}")) for s in ("",) + SIDECAR_SUFFIXES if os.path.exists(f"{db_path}{s}")]
    if not sources or sources[0][0] != "":
        raise BackupRefused(f"{db_path} does not exist; there is nothing to back up")
    directory = backup_dir(db_path)
    ensure_private_dir(directory)
    _sweep(directory, db_path.name)
    size = sum(p.stat().st_size for _, p in sources)
    space = free_space(directory)
    if space is None:
        raise BackupRefused(f"the free space of {directory} cannot be read, so no forensic backup "
                            "was taken and no repair was attempted")
    free, volume = space
    need = required_space(size, volume)
    if free < need:
        raise BackupRefused(f"{directory} has {free} bytes free; a forensic backup of {size} bytes needs "
                            f"{need} (the copy plus max(256 MiB, 2% of the volume)); free space, then retry. "
                            "No repair was attempted")
    second = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    stamp = _unused_stamp(directory, db_path.name, f"{second}-{os.getpid()}")
    name = f"{db_path.name}.forensic-{stamp}"
    staged: list[tuple[str, Path]] = []
    published: list[Path] = []
    try:
        digests = {}
        for suffix, source in sources:
            target = directory / f"{STAGING}{stamp}-{db_path.name}{suffix}"
            digests[suffix] = _copy(source, target)
            staged.append((suffix, target))
        existing = _identical(db_path, digests)
        if existing is not None:
            for _, target in staged:
                target.unlink(missing_ok=True)
            return BackupSet(existing.name, directory, digests, reused=True)
        manifest = directory / f"{STAGING}{stamp}-{db_path.name}.json"
        manifest_data = {"database": str(db_path), "taken_at": time.time(), "pid": os.getpid(),
                         "files": {f"{name}{s}": {"bytes": Path(t).stat().st_size, "sha256": digests[s]}
                                   for s, t in staged}}
        _write_synced(manifest, json.dumps(manifest_data, indent=2).encode())
        staged.append((".json", manifest))
        # Sidecars, then the manifest, then the main file: a set with its main file is whole.
        order = [x for x in staged if x[0] not in ("", ".json")] + [x for x in staged if x[0] == ".json"] \
            + [x for x in staged if x[0] == ""]
        for suffix, target in order:
            final = directory / f"{name}{suffix}"
            os.replace(target, final)
            published.append(final)
        fsync_dir(directory)
    except BaseException:
        for _, target in staged:
            target.unlink(missing_ok=True)
        for final in published:
            final.unlink(missing_ok=True)
        raise
    _prune(db_path)
    return BackupSet(name, directory, digests)


def _unused_stamp(directory: Path, db_name: str, base: str) -> str:
    """`base`, or `base-0002`, `base-0003`...: the first stamp no file of any set uses, so a
    set taken within the same second as another never replaces it. The numbers sort in
    the order the sets were taken."""
    taken = {p.name for p in directory.iterdir()}
    stamp, n = base, 1
    while any(f"{db_name}.forensic-{stamp}{s}" in taken for s in ("", ".json") + SIDECAR_SUFFIXES):
        n += 1
        stamp = f"{base}-{n:04d}"
    return stamp


def _copy(source: Path, target: Path) -> str:
    import hashlib  # OpenSSL's 3.5 MB resident, only for a repair: not in every store's process

    digest = hashlib.sha256()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _digests_of(main: Path) -> dict[str, str]:
    manifest = main.with_name(main.name + ".json")
    try:
        files = json.loads(manifest.read_text(encoding="utf-8"))["files"]
        return {name[len(main.name):]: info["sha256"] for name, info in files.items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _identical(db_path: Path, digests: dict[str, str]) -> Path | None:
    for main in reversed(list_sets(db_path)):
        if _digests_of(main) == digests:
            return main
    return None


def _sweep(directory: Path, db_name: str) -> None:
    """Remove staging debris and the pieces of sets whose main file never arrived."""
    prefix = f"{db_name}.forensic-"
    names = {p.name for p in directory.iterdir()}
    for entry in list(directory.iterdir()):
        if entry.name.startswith(STAGING):
            _remove(entry)
        elif entry.name.startswith(prefix):
            for suffix in (".json",) + SIDECAR_SUFFIXES:
                if entry.name.endswith(suffix) and entry.name[: -len(suffix)] not in names:
                    _remove(entry)


def _prune(db_path: Path) -> None:
    sets = list_sets(db_path)
    for main in sets[:-KEEP] if len(sets) > KEEP else []:
        for suffix in SIDECAR_SUFFIXES + (".json",):
            Path(f"{main}{suffix}").unlink(missing_ok=True)
        main.unlink(missing_ok=True)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
