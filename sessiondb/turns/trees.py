"""A working tree as checkpoints see it: which files count, read and written inside it only.

The files are git's own answer: in a git work tree, `git ls-files` (tracked files and
untracked ones not ignored); outside one, the same command over a throw-away empty
repository, so `.gitignore` files (and the user's global excludes) are honoured the same
way in both. Nothing outside the tree is ever read or written: a symbolic link is
recorded as skipped and never followed, and a path whose directory resolves outside the
tree (a directory swapped for a link) is refused.
"""

from __future__ import annotations

import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..errors import CheckpointRefused, InvalidInput


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 8 * 1024 * 1024  # a larger file is skipped (listed), not snapshotted
    max_files: int = 20_000  # a larger tree is refused whole
    max_total_bytes: int = 256 * 1024 * 1024


@dataclass
class Scan:
    """The tree's files now: relative path -> (content, mode), and what was skipped and why."""

    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def resolve_tree(tree: str | os.PathLike[str]) -> Path:
    path = Path(os.path.realpath(os.fspath(tree)))
    if not path.is_dir():
        raise InvalidInput(f"the working tree {os.fspath(tree)!r} is not a directory")
    return path


def scan(tree: Path, limits: Limits, exclude: tuple[Path, ...] = ()) -> Scan:
    """Read every file that counts, within the limits (CheckpointRefused over them)."""
    out = Scan()
    total = 0
    names = listed(tree, exclude)
    if len(names) > limits.max_files:
        raise CheckpointRefused(f"{tree} holds {len(names):,} files, over the checkpoint limit of "
                                f"{limits.max_files:,}; nothing was snapshotted")
    for rel in names:
        try:
            content, mode = read(tree, rel, limits.max_file_bytes)
        except _Skip as why:
            out.skipped[rel] = str(why)
            continue
        except FileNotFoundError:
            continue  # tracked but deleted: absent from the tree now
        total += len(content)
        if total > limits.max_total_bytes:
            raise CheckpointRefused(f"the files of {tree} hold more than {limits.max_total_bytes:,} bytes, over the "
                                    "checkpoint limit; nothing was snapshotted")
        out.files[rel] = (content, mode)
    return out


def listed(tree: Path, exclude: tuple[Path, ...]) -> list[str]:
    """The tree's files as git lists them (relative POSIX paths), minus those under `exclude`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    inside = subprocess.run(["git", "-C", str(tree), "rev-parse", "--is-inside-work-tree"], env=env,
                            capture_output=True, text=True)
    with tempfile.TemporaryDirectory(prefix="sessiondb-git-") as scratch:
        if inside.returncode == 0 and inside.stdout.strip() == "true":
            command = ["git", "-C", str(tree), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
        else:
            subprocess.run(["git", "init", "-q", "--bare", scratch], env=env, check=True, capture_output=True)
            command = ["git", f"--git-dir={scratch}", f"--work-tree={tree}", "-C", str(tree), "ls-files", "-z",
                       "--others", "--exclude-standard"]
        result = subprocess.run(command, env=env, capture_output=True, check=True)
    skip = [p.relative_to(tree).as_posix() for p in exclude if p != tree and p.is_relative_to(tree)]
    names = set()
    for raw in result.stdout.split(b"\0"):
        name = os.fsdecode(raw)
        if not name or name.endswith("/"):  # a nested repository is not this tree's file
            continue
        if any(name == s or name.startswith(s + "/") for s in skip):
            continue
        names.add(name)
    return sorted(names)


class _Skip(Exception):
    """A listed path that is not snapshotted, and why."""


def read(tree: Path, rel: str, max_bytes: int) -> tuple[bytes, int]:
    path = inside(tree, rel)
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise _Skip("a symbolic link (never followed)")
    if not stat.S_ISREG(st.st_mode):
        raise _Skip("not a regular file")
    if st.st_size > max_bytes:
        raise _Skip(f"{st.st_size:,} bytes, over the {max_bytes:,}-byte limit")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as f:
        return f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode)


def writable(tree: Path, rel: str, *, create: bool = False) -> Path:
    """`tree/rel` where a restore may put a file: inside the tree, and not a link or a directory."""
    path = inside(tree, rel, create=create)
    if path.is_symlink() or path.is_dir():
        raise CheckpointRefused(f"{rel} is now a link or a directory; sessiondb does not write through it, "
                                "and nothing was written")
    return path


def write(tree: Path, rel: str, content: bytes, mode: int) -> None:
    path = writable(tree, rel, create=True)
    # A name nobody can predict, created with O_EXCL: nothing planted beside the file can
    # stand in for it, so a restore never meets a link half-way.
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".sessiondb-restore", dir=path.parent)
    staging = Path(name)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(staging, mode & 0o777)
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def remove(tree: Path, rel: str) -> None:
    path = inside(tree, rel)
    if not path.is_dir() or path.is_symlink():
        path.unlink(missing_ok=True)


def inside(tree: Path, rel: str, *, create: bool = False) -> Path:
    """`tree/rel`, refused unless it is a normal relative path whose directory is in the tree."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or not pure.parts or ".." in pure.parts or rel != pure.as_posix():
        raise CheckpointRefused(f"{rel!r} is not a path inside the tree; nothing was written")
    path = tree.joinpath(*pure.parts)
    # realpath resolves the links of the part that exists, so this holds before mkdir too.
    parent = Path(os.path.realpath(path.parent))
    if parent != tree and not parent.is_relative_to(tree):
        raise CheckpointRefused(f"{rel} resolves outside the tree {tree} (through a link); nothing was written")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    return path
