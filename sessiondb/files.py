"""Writing a file that other users can neither read nor redirect, and that appears whole.

Every file a command writes (exports, backups, recovered stores, ledgers, reports) is
made in a new private directory (`mkdtemp`: 0700, a name nobody can predict) beside its
destination, so a symlink planted at a temporary name can never be written through and a
reader never sees a half-written file; it is 0600 whatever the umask, synced, and then
renamed into place in one step: an existing destination is replaced atomically
(`replace=True`) or left alone (`replace=False`: the name is claimed with a hard link,
which fails if anything, a symlink included, is already there).

Files another library creates (SQLite's store and index files) are claimed first
(`claim_private`): made empty, 0600, with O_EXCL and O_NOFOLLOW, so SQLite opens a file
that is already private; a file found there that another account planted, or a link, is
refused before anything reads or writes it.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from .errors import InvalidInput
from .home import FILE_MODE, fsync_dir

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class DestinationExists(InvalidInput, FileExistsError):
    """A file that must be new is already there (whatever it is, a link included)."""


def claim_private(path: Path, sidecars: tuple[str, ...] = ()) -> None:
    """Make sure `path` is a regular file of this account's before another library opens
    it: created empty, 0600, with O_EXCL | O_NOFOLLOW when missing; when present, refused
    (InvalidInput) if it is a link or not this account's (anything else that is not a file,
    such as a directory of one's own, SQLite refuses itself), judged by lstat alone (opening
    and closing a descriptor on a live SQLite file would drop the process's locks on it).
    Each existing sidecar (`path` + suffix) is held to the same rule, since SQLite would
    open a planted one as the store's own. An existing file's mode is the caller's to
    tighten (home.make_private), once it knows the file is one it may change."""
    path = Path(path)
    try:
        os.close(os.open(path, _CREATE, FILE_MODE))
    except FileExistsError:
        pass
    for name in [str(path)] + [f"{path}{suffix}" for suffix in sidecars]:
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise InvalidInput(f"{name} is a link; sessiondb opens only a file it made there, never through a "
                               "link: remove it, or choose another place for the store")
        if st.st_uid != os.geteuid():
            raise InvalidInput(f"{name} belongs to another account (uid {st.st_uid}); sessiondb never opens a "
                               "file someone else could have planted: remove it, or choose another place")


@contextmanager
def staged(destination: Path, *, replace: bool = True) -> Iterator[Path]:
    """A path to build `destination` at (by any means, SQLite included), published when the
    block ends without an error; on an error nothing is published and the staging is removed."""
    destination = Path(destination)
    directory = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".partial", dir=destination.parent))
    staging = directory / destination.name
    try:
        yield staging
        os.chmod(staging, FILE_MODE)  # the directory is ours alone: no link can stand in for the file
        fd = os.open(staging, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(staging, destination)
        else:
            try:
                os.link(staging, destination, follow_symlinks=False)
            except FileExistsError:
                raise DestinationExists(f"{destination} already exists; choose a new file") from None
        fsync_dir(destination.parent)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@contextmanager
def private_file(destination: Path, mode: str = "w", *, replace: bool = True) -> Iterator[IO]:
    """A file object (text in UTF-8 for "w", bytes for "wb") whose content becomes
    `destination` when the block ends without an error."""
    with staged(destination, replace=replace) as staging:
        fd = os.open(staging, _CREATE, FILE_MODE)
        with os.fdopen(fd, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as out:
            yield out
            out.flush()

def descriptors_of(path: str) -> list[int]:
    """This process's open descriptors whose target is `path` (read from /proc/self/fd)."""
    found = []
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return found
    for name in names:
        try:
            if os.readlink(f"/proc/self/fd/{name}") in (path, f"{path} (deleted)"):
                found.append(int(name))
        except OSError:
            continue
    return found
