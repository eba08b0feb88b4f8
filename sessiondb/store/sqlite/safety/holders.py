"""Which other processes hold a store (S-19): maintenance refuses while any does.

On Linux every process's open files are links under `/proc/<pid>/fd`; a link to the
database or one of its sidecars (`-wal`, `-shm`, `-journal`, the search index's files) is a holder, and so is a link
to one that was deleted (the kernel appends ` (deleted)`). A process whose descriptors
cannot be read (another user's) counts only when its command line shows it is sessiondb,
so one unreadable stranger does not block maintenance forever. Without /proc, psutil's
view of open files is used. psutil (about 2 MB resident) is imported only when a
question is asked: every open of a store loads this module, few ever ask.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ....home import SIDECAR_SUFFIXES
from ..index.schema import FILES as INDEX_FILES

DELETED = " (deleted)"


@dataclass(frozen=True)
class Holder:
    pid: int
    command: str
    files: tuple[str, ...]  # what it holds; empty when its descriptors could not be read

    def __str__(self) -> str:
        return f"PID {self.pid} ({self.command})"


def holders(db_path: Path | str, *, include_self: bool = False) -> list[Holder]:
    """Processes other than this one with the store or a sidecar open, by pid."""
    db = os.path.realpath(db_path)
    targets = {db, *(db + suffix for suffix in SIDECAR_SUFFIXES + INDEX_FILES)}
    me = os.getpid()
    found = []
    for pid in _pids():
        if pid == me and not include_self:
            continue
        held = _held_files(pid, targets)
        if held is None:
            command = _command(pid)
            if "sessiondb" in command:
                found.append(Holder(pid, command, ()))
        elif held:
            found.append(Holder(pid, _command(pid), tuple(sorted(held))))
    return found


def _pids() -> list[int]:
    if os.path.isdir("/proc"):
        return sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    import psutil
    return sorted(psutil.pids())


def _held_files(pid: int, targets: set[str]) -> set[str] | None:
    """Which targets `pid` holds, or None when its descriptors cannot be read."""
    fd_dir = f"/proc/{pid}/fd"
    if not os.path.isdir("/proc"):
        import psutil
        try:
            return {f.path for f in psutil.Process(pid).open_files() if f.path in targets}
        except (psutil.AccessDenied, psutil.ZombieProcess):
            return None
        except psutil.NoSuchProcess:
            return set()
    try:
        names = os.listdir(fd_dir)
    except PermissionError:
        return None
    except (FileNotFoundError, ProcessLookupError):
        return set()  # the process ended while we looked
    held = set()
    for name in names:
        try:
            link = os.readlink(f"{fd_dir}/{name}")
        except OSError:
            continue
        if link in targets or (link.endswith(DELETED) and link[: -len(DELETED)] in targets):
            held.add(link)  # the " (deleted)" suffix is kept: it tells the operator why
    return held


def _command(pid: int) -> str:
    import psutil
    try:
        cmdline = psutil.Process(pid).cmdline()
        return " ".join(cmdline) if cmdline else psutil.Process(pid).name()
    except (psutil.Error, OSError):
        return "?"
