"""The safety net for store handles dropped without close() (S-11, S-27).

A public handle owns one backend handle (a SQLite SharedFile counts one reference per
backend handle, so releasing it never tears down what other handles share). When the
public handle is garbage-collected while still open, its backend handle is released and a
ResourceWarning names it, the way Python's own files do. The release runs on a reaper
thread, never inside the collector: a collection can run on any thread at any allocation,
including one that holds the writer's or the shared files' lock, and closing there could
deadlock. Handles inherited through fork belong to the parent and are left alone.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import warnings
import weakref
from typing import Any

from .backend import Backend

log = logging.getLogger(__name__)

# SimpleQueue.put is safe to call from a finalizer (it is reentrant), unlike a Lock.
_dropped: "queue.SimpleQueue[Backend]" = queue.SimpleQueue()
_reaper_lock = threading.Lock()
_reaper_pid: int | None = None  # the process whose reaper thread runs


def watch(handle: Any, backend: Backend) -> weakref.finalize:
    """Release `backend` if `handle` is collected before it is closed; detach() on close."""
    _start_reaper()
    finalizer = weakref.finalize(handle, _dropped_open, backend, os.getpid(), repr(handle))
    finalizer.atexit = False  # at exit the process lets go of everything anyway
    return finalizer


def _dropped_open(backend: Backend, pid: int, name: str) -> None:
    if os.getpid() != pid:
        return
    warnings.warn(f"{name} was garbage-collected without close(); it has been closed now. "
                  "Use `with sessiondb.open_store(...) as store:` or call store.close()",
                  ResourceWarning, stacklevel=2)
    _dropped.put(backend)


def _start_reaper() -> None:
    global _reaper_pid
    with _reaper_lock:
        if _reaper_pid == os.getpid():
            return
        _reaper_pid = os.getpid()  # after fork the child starts its own
        threading.Thread(target=_reap, name="sessiondb-reaper", daemon=True).start()


def _after_fork() -> None:
    global _reaper_lock
    _reaper_lock = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_after_fork)


def _reap() -> None:
    while True:
        backend = _dropped.get()
        try:
            backend.close()
        except Exception:  # an abandoned handle has no caller left to tell
            log.warning("closing a dropped store handle on %s failed", backend.location, exc_info=True)
