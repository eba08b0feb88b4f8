"""Name events in the store's directory, so the WAL check can skip its fstat.

The WAL check (identity.py, S-14) asks whether the `-wal` file SQLite writes through is
still the one at the path. An fstat of the WAL descriptor answers it, but right after the
commit's fsync it costs as much as a third of a commit on ext4. A deleted, renamed or
replaced WAL is always a change of a *name* in the store's directory, which the kernel
reports through inotify (IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE), whichever path
or process made it. So the check runs the fstat only when such an event named the WAL,
or when the watch cannot vouch for the interval: its queue overflowed, the directory
itself was moved or removed, or inotify is not available (then it always runs).
"""

from __future__ import annotations

import ctypes
import os
import struct

IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, 0o2000000
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_NAMES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_SELF = IN_DELETE_SELF | IN_MOVE_SELF
_LOST = _SELF | IN_Q_OVERFLOW | IN_IGNORED
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)


class NameWatch:
    """Has a name in one directory been created, deleted or renamed since the last ask?"""

    def __init__(self, directory: str, name: str) -> None:
        self._name = os.fsencode(name)
        self._fd: int | None = None
        self._lost = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                return
            if libc.inotify_add_watch(fd, os.fsencode(directory), _NAMES | _SELF) < 0:
                os.close(fd)
                return
            self._fd = fd
        except (OSError, AttributeError):  # no inotify here: every ask says "maybe"
            self._fd = None

    def changed(self) -> bool:
        """True unless the watch saw no event for the name since the last call (True also
        whenever it cannot tell)."""
        if self._fd is None or self._lost:
            return True
        seen = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                self._lost = True
                return True
            offset = 0
            while offset < len(data):
                _, mask, _, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size:offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                if mask & _LOST:
                    self._lost = True  # from now on the watch cannot vouch for anything
                    seen = True
                elif name == self._name:
                    seen = True

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
