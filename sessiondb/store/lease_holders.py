"""Who holds a compaction lease, and whether that holder is provably dead (S-07), on every backend.

A lease records its holder's process identity: the host name, the kernel's boot id, the
PID namespace, the PID and the process's start time in clock ticks after boot. A lease
still within its TTL is taken over only on proof that its holder is gone: it ran on this
kernel (same host name and boot id) in this PID namespace, and its PID is gone, is a
zombie, or now belongs to a process that started at another time. Anything short of
proof (another host or container, a PID that is alive, a thread of this very process,
/proc unreadable) waits for the TTL. The proof is the client's: a server cannot see the
processes of the hosts its clients run on, but a client can see those of its own host.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class ProcessIdentity:
    pid: int
    host: str
    boot_id: str | None
    pid_ns: str | None
    pid_start: int | None  # clock ticks after boot: exact, unlike a wall-clock start time


_identity_cache: dict[int, ProcessIdentity] = {}


def this_process() -> ProcessIdentity:
    pid = os.getpid()
    ident = _identity_cache.get(pid)  # keyed by pid: a forked child is a new holder
    if ident is None:
        ident = ProcessIdentity(
            pid=pid,
            host=socket.gethostname(),
            boot_id=_read_text("/proc/sys/kernel/random/boot_id"),
            pid_ns=_readlink("/proc/self/ns/pid"),
            pid_start=start_ticks(pid),
        )
        _identity_cache[pid] = ident
    return ident


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip() or None
    except (OSError, ValueError):
        return None


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time in clock ticks) of `pid`, or None if it does not exist.

    Raises OSError when the process may exist but cannot be inspected.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            raw = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = raw[raw.rindex(")") + 2:].split()
    return fields[0], int(fields[19])  # field 3 is the state, field 22 the start time


def start_ticks(pid: int) -> int | None:
    try:
        stat = proc_stat(pid)
    except (OSError, ValueError, IndexError):
        return None
    return None if stat is None else stat[1]


def holder_is_provably_dead(row: Mapping[str, Any], me: ProcessIdentity | None = None) -> bool:
    """Whether the process that took this lease is certainly gone (S-07).

    False means "not proven", never "alive": the lease then waits for its TTL.
    """
    me = me or this_process()
    same_kernel = (
        row["host"] == me.host
        and row["boot_id"] is not None and row["boot_id"] == me.boot_id
        and row["pid_ns"] is not None and row["pid_ns"] == me.pid_ns
    )
    if not same_kernel:
        return False
    if row["pid"] == me.pid:
        # This process (another thread of it is alive), unless the PID was reused by us.
        return row["pid_start"] is not None and me.pid_start is not None and row["pid_start"] != me.pid_start
    try:
        stat = proc_stat(row["pid"])
    except (OSError, ValueError, IndexError):
        return False
    if stat is None:
        return True  # no such process in our PID namespace
    state, start = stat
    if state in ("Z", "X"):
        return True  # exited, not yet reaped: it can do nothing more
    return row["pid_start"] is not None and start != row["pid_start"]  # the PID was reused
