"""Every page a captured WAL still holds, including those SQLite no longer reads (S-49).

SQLite reads a WAL only up to its last valid commit of the current cycle: frames whose
salts are the header's. When a checkpoint resets the WAL, the next cycle writes from the
start again with new salts, and the frames of earlier cycles beyond its end stay in the
file, unread. Their pages were checkpointed into the main file, so normally nothing is
lost; but when that main file was replaced (a copy over a live store), those stale frames
are the only remaining copy of pages the old file held before its last checkpoint.

`lay_every_frame` writes, page by page, the newest version the WAL holds of each page
(earlier cycles first, by their salt-1 counter, which every reset increments; the current
cycle last, in frame order) into a private copy of a store file. The result is a best
reconstruction of the old file, whose rows salvage (recover.py) then reads; it never
replaces what SQLite's own reading of the WAL finds, it adds to it.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

_HEADER = struct.Struct(">IIIIIIII")  # magic, version, page size, checkpoint seq, salt-1, salt-2, checksums
_FRAME = struct.Struct(">IIIIII")  # page number, size after commit, salt-1, salt-2, checksums
_MAGIC = (0x377F0682, 0x377F0683)


def lay_every_frame(wal: Path, copy: Path) -> int:
    """Write the newest version of each page in `wal` into the file `copy` (a private copy,
    never a live store); returns how many pages were written (0 if `wal` is no WAL)."""
    with open(wal, "rb") as f:
        data = f.read()
    if len(data) < _HEADER.size:
        return 0
    magic, _version, page_size, _seq, salt1, salt2, _c1, _c2 = _HEADER.unpack_from(data)
    if magic not in _MAGIC or page_size < 512 or page_size & (page_size - 1):
        return 0
    newest: dict[int, tuple[tuple[int, int, int], int]] = {}
    step = _FRAME.size + page_size
    for index, offset in enumerate(range(_HEADER.size, len(data) - step + 1, step)):
        page, _commit, s1, s2, _k1, _k2 = _FRAME.unpack_from(data, offset)
        if page == 0:
            continue
        current = (s1, s2) == (salt1, salt2)
        # Earlier cycles rank by their salt-1 (older is smaller, modulo wrap-around relative
        # to the current one); the current cycle ranks above them all.
        rank = (1, 0, index) if current else (0, (s1 - salt1) & 0xFFFFFFFF, index)
        if page not in newest or rank > newest[page][0]:
            newest[page] = (rank, offset + _FRAME.size)
    fd = os.open(copy, os.O_WRONLY)
    try:
        for page, (_rank, start) in newest.items():
            os.pwrite(fd, data[start:start + page_size], (page - 1) * page_size)
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(newest)
