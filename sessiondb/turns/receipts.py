"""Honest edit receipts (S-52): the failed file edits of one turn that still stand at its end.

A failure is keyed by the file's resolved on-disk identity: the real, normalised path
(relative spellings against the turn's working directory, `..` and symlinks resolved), so
a later success under any spelling of the same file clears it. Each failure keeps the
file's `(mtime_ns, size)` as it was when the edit failed; at the turn's end a failure
whose file has changed since (a shell redirect, a script) is dropped, because the file is
no longer what the failure describes. The report never says files were not modified: a
failed edit does not prove that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Failure:
    path: str  # the resolved identity
    error: str
    mtime_ns: int | None  # None: the file did not exist when the edit failed
    size: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "error": self.error, "mtime_ns": self.mtime_ns, "size": self.size}


class EditReceipts:
    """The file tools' reports within one turn, resolved against the turn's `cwd`."""

    def __init__(self, cwd: str | os.PathLike[str]) -> None:
        self.cwd = os.path.realpath(os.fspath(cwd))
        self._failures: dict[str, Failure] = {}

    def identity(self, path: str | os.PathLike[str]) -> str:
        """The file `path` names, as the tool resolves it: real and normalised."""
        return os.path.realpath(os.path.join(self.cwd, os.path.expanduser(os.fspath(path))))

    def failed(self, path: str | os.PathLike[str], error: str) -> None:
        key = self.identity(path)
        self._failures[key] = Failure(key, str(error), *_state(key))

    def succeeded(self, path: str | os.PathLike[str]) -> None:
        self._failures.pop(self.identity(path), None)

    def standing(self) -> list[Failure]:
        """The failures whose file is still as it was when its edit failed."""
        return [f for f in self._failures.values() if _state(f.path) == (f.mtime_ns, f.size)]


def report(failures: list[Failure] | list[dict[str, Any]]) -> str:
    """The turn-end report: empty when no failed edit stands."""
    items = [f.to_dict() if isinstance(f, Failure) else f for f in failures]
    if not items:
        return ""
    lines = [f"{len(items)} file edit(s) FAILED this turn:"]
    lines += [f"  {item['path']}: {item['error']}" for item in items]
    lines.append("Check these files before relying on them.")
    return "\n".join(lines)


def _state(path: str) -> tuple[int | None, int | None]:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, None
    return st.st_mtime_ns, st.st_size
