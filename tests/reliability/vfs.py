"""An APSW VFS shim for the reliability tests: it counts, fails and records file I/O.

The library's only part in this is the testing hook `open_store(..., vfs=NAME)`, which
routes every connection of the store through the named VFS. Everything else lives here:

- `FaultPlan`: fail the k-th write, sync or truncate (counted across the store's files)
  with SQLITE_IOERR, once or from then on (persistent). With no target it only counts;
  with `only`, it counts (and fails) only the files whose name contains that text.
- `Recorder`: keep every write, sync, truncate and delete of the database and its WAL
  or journal, in order, so that power-loss images can be rebuilt from the log
  (see test_power_loss.py). The test adds its own markers (acknowledgements) to the log.

Both sit below SQLite and pass everything through to the default VFS otherwise.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field

import apsw

_names = itertools.count()


def _filename(name) -> str | None:
    if name is None:
        return None
    if isinstance(name, str):
        return name
    return name.filename()  # apsw.URIFilename


@dataclass
class FaultPlan:
    """Which operation fails: the `k`-th (1-based) operation of kind `op`; None only counts."""

    op: str | None = None  # "write", "sync" or "truncate"
    k: int = 0
    persistent: bool = False
    only: str | None = None  # e.g. "-search": the search index's files alone
    counts: dict[str, int] = field(default_factory=lambda: {"write": 0, "sync": 0, "truncate": 0})
    injected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, op: str, name: str | None = None) -> None:
        if self.only is not None and (name is None or self.only not in name):
            return
        with self.lock:
            self.counts[op] += 1
            n = self.counts[op]
            fail = op == self.op and (n == self.k or (self.persistent and n > self.k))
            if fail:
                self.injected += 1
        if fail:
            raise apsw.IOError(f"injected I/O error on {op} #{n}")


@dataclass
class Recorder:
    """The ordered log of what reached the files: ("write", file, offset, data),
    ("sync", file), ("truncate", file, size), ("delete", file), plus test markers."""

    log: list[tuple] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: tuple) -> None:
        with self.lock:
            self.log.append(event)

    def mark(self, *marker) -> int:
        with self.lock:
            self.log.append(("mark", *marker))
            return len(self.log)


class ShimVFS(apsw.VFS):
    """A VFS over the default one that consults a FaultPlan and feeds a Recorder."""

    def __init__(self, plan: FaultPlan | None = None, recorder: Recorder | None = None, name: str | None = None):
        self.name = name or f"sessiondb-test-{next(_names)}"
        self.plan = plan
        self.recorder = recorder
        super().__init__(self.name, "")

    def xOpen(self, name, flags):
        return ShimFile(self, name, flags)

    def xDelete(self, filename, syncdir):
        if self.recorder is not None:
            self.recorder.add(("delete", _filename(filename)))
        return super().xDelete(filename, syncdir)

    def close(self) -> None:
        self.unregister()


class ShimFile(apsw.VFSFile):
    def __init__(self, vfs: ShimVFS, name, flags):
        self._plan = vfs.plan
        self._recorder = vfs.recorder
        self._name = _filename(name)
        super().__init__("", name, flags)

    def _track(self) -> bool:
        return self._recorder is not None and self._name is not None

    def xWrite(self, data, offset):
        if self._plan is not None:
            self._plan.check("write", self._name)
        super().xWrite(data, offset)
        if self._track():
            self._recorder.add(("write", self._name, offset, bytes(data)))

    def xSync(self, flags):
        if self._plan is not None:
            self._plan.check("sync", self._name)
        super().xSync(flags)
        if self._track():
            self._recorder.add(("sync", self._name))

    def xTruncate(self, newsize):
        if self._plan is not None:
            self._plan.check("truncate", self._name)
        super().xTruncate(newsize)
        if self._track():
            self._recorder.add(("truncate", self._name, newsize))
