"""Message uids: 128 random bits as 32 hex digits, drawn from the kernel a page at a time.

A uid is what makes an append idempotent: two messages of one session with the same uid
are one message. So uids must never repeat, in any process, and uuid.uuid4() gives that
at the price of a getrandom call per message. That call releases the GIL, and with eight
threads appending, each release is a hand-off the committing thread waits behind. Here
one call fills a buffer for 256 uids.

A forked child must never hand out the uids its parent's buffer still holds (the parent
would hand them out too, and a child's message would be taken for a retry of the
parent's), so the child drops the buffer before it runs anything else.
"""

from __future__ import annotations

import os
import threading

_UID_BYTES = 16
_BUFFER_BYTES = 256 * _UID_BYTES

_lock = threading.Lock()
_buffer = b""
_offset = 0


def new_uid() -> str:
    """A fresh uid, unique across processes (128 bits from os.urandom)."""
    global _buffer, _offset
    with _lock:
        if _offset >= len(_buffer):
            _buffer, _offset = os.urandom(_BUFFER_BYTES), 0
        start = _offset
        _offset = start + _UID_BYTES
        return _buffer[start:start + _UID_BYTES].hex()


def _forget_after_fork() -> None:
    global _buffer, _offset, _lock
    _lock = threading.Lock()  # the parent may have held it at the fork
    _buffer, _offset = b"", 0


os.register_at_fork(after_in_child=_forget_after_fork)
