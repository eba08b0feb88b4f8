"""File events in the store's directory, so the identity check can skip its system calls.

The identity check (identity.py) runs before every write group. It asks whether the
database SQLite writes through is still the one at the path, with the same content
stamp (S-13), and whether the `-wal` file is still the one at its path (S-14). Asked
directly, that is an fstat and two preads of the database and an fstat of the WAL per
group: each releases the GIL, so with several writer threads each is a hand-off the
committing thread waits behind, and an fstat right after the commit's fsync costs as much
as a third of a commit on ext4.

Every way those answers can change is an event the kernel reports through inotify,
whichever path or process made it:
- the WAL's name in the directory created, deleted or renamed (IN_CREATE, IN_DELETE,
  IN_MOVED_FROM, IN_MOVED_TO): `mv` over the WAL, `rm` of it;
- the database file itself, watched by inode through the descriptor SQLite holds, whatever
  name or directory the change goes through: written to or truncated (IN_MODIFY: `cp` or
  `dd` onto the same inode, a checkpoint) or linked and unlinked (IN_ATTRIB, which a link
  count change raises: `mv` over the store, `rm` of it).

So each question is asked again only when an event concerns it, or when the watch cannot
vouch for the interval: its queue overflowed, the directory was moved or removed, or
inotify is not available (then every ask says "changed"). One read of the inotify
descriptor per group replaces the rest. Local filesystems only: a network filesystem
does not report what other hosts do, and the store does not run in WAL there (connect.py),
where identity.py asks directly every time.
"""

from __future__ import annotations

import ctypes
import os
import struct

IN_NONBLOCK, IN_CLOEXEC = os.O_NONBLOCK, 0o2000000
IN_MODIFY, IN_ATTRIB = 0x2, 0x4
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
_NAMES = IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
_SELF = IN_DELETE_SELF | IN_MOVE_SELF
_CONTENT = IN_MODIFY | IN_ATTRIB
_LOST = _SELF | IN_Q_OVERFLOW | IN_IGNORED
_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then the name)

#: What changes() returns when the watch cannot tell: every name, and the file.
EVERYTHING = frozenset({"*"})
#: The key under which changes() reports an event of the watched file itself.
FILE = "file"


class FileWatch:
    """Has one of some names in a directory been created, deleted or renamed, or one open
    file been written to or (un)linked, since the last ask?"""

    def __init__(self, directory: str, names: tuple[str, ...], file_fd: int | None = None) -> None:
        """`file_fd`: a descriptor of the file to watch by inode (the one SQLite holds)."""
        self._names = {os.fsencode(n): n for n in names}
        self._fd: int | None = None
        self._file_wd: int | None = None
        self._lost = False
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd < 0:
                return
            if libc.inotify_add_watch(fd, os.fsencode(directory), _NAMES | _SELF) < 0:
                os.close(fd)
                return
            if file_fd is not None:
                # Through /proc: the inode SQLite has open, even if the path moved meanwhile.
                wd = libc.inotify_add_watch(fd, os.fsencode(f"/proc/self/fd/{file_fd}"), _CONTENT | _SELF)
                if wd < 0:
                    os.close(fd)
                    return
                self._file_wd = wd
            self._fd = fd
        except (OSError, AttributeError):  # no inotify here: every ask says "everything"
            self._fd = None

    @property
    def watches_file(self) -> bool:
        return self._fd is not None and self._file_wd is not None

    def changes(self) -> frozenset[str]:
        """The names (and FILE) with an event since the last call; EVERYTHING whenever the
        watch cannot tell."""
        if self._fd is None or self._lost:
            return EVERYTHING
        seen: set[str] = set()
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return frozenset(seen)
            except OSError:
                self._lost = True
                return EVERYTHING
            offset = 0
            while offset < len(data):
                wd, mask, _, length = _HEADER.unpack_from(data, offset)
                name = data[offset + _HEADER.size:offset + _HEADER.size + length].rstrip(b"\0")
                offset += _HEADER.size + length
                if mask & _LOST:
                    self._lost = True  # from now on the watch cannot vouch for anything
                    return EVERYTHING
                if wd == self._file_wd:
                    seen.add(FILE)
                elif name in self._names:
                    seen.add(self._names[name])

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def concerns(changes: frozenset[str], *keys: str) -> bool:
    """Whether `changes` (from FileWatch.changes) may concern any of `keys`."""
    return changes is EVERYTHING or any(k in changes for k in keys)
