"""The doctor, salvage and capture capabilities (optional.Doctor, Salvageable, Captures) on a store file.

Both work on the file without opening it as a store: examination through a private
read-only connection, repair and recovery on their own connections (safety/doctor.py,
safety/recover.py). The spool replay that ends a repair goes through the neutral layer,
which the caller hands in as `replay`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...model import SpoolReport
from .safety import captures as captured
from .safety import doctor as doctors
from .safety import recover as recovery
from .safety.holders import Holder, holders


class FileDoctor:
    """The doctor of the SQLite store at `path`; `command` is how guidance names the store."""

    def __init__(self, path: Path, *, command: str, replay: Callable[[], SpoolReport]) -> None:
        self.path = path
        self.location = str(path)
        self._command = command
        self._replay = replay

    def examine(self, *, deep: bool = False) -> doctors.Report:
        return doctors.examine(self.path, deep=deep, command=self._command)

    def repair(self, *, deep: bool = False) -> doctors.Report:
        return doctors.repair(self.path, deep=deep, command=self._command, replay=self._replay)

    def holders(self) -> list[Holder]:
        return holders(self.path)

    def recover(self, output: str | None, *, inspect_only: bool = False) -> recovery.RecoverReport:
        return recovery.recover(self.path, output, inspect_only=inspect_only)

    # --- captures (contract.Captures): what the way back reads (store/captured.py) ------

    @property
    def spool_anchor(self) -> Path:
        return self.path

    def captures(self) -> list[dict[str, Any]]:
        return captured.captures(self.path)

    def read_capture(self, capture: str, directory: str) -> list[recovery.RecoverReport]:
        return recovery.recover_capture(self.path, capture, Path(directory))

    def mark_restored(self, capture: str, record: dict[str, Any]) -> None:
        captured.mark_restored(self.path, capture, record)
