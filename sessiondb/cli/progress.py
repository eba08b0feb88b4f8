"""Progress for the long commands (import, export to a file, doctor --deep, recover).

A rich bar on stderr, drawn only when stderr is a terminal and removed when done, so
pipes, files, scripts and `--json` see exactly what they saw without it. A step whose
length is unknown (an integrity check, a salvage) gets a pulsing bar and the time spent.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn
from rich.progress import TimeElapsedColumn

from .render import _is_terminal


def shown() -> bool:
    return _is_terminal(sys.stderr)


@contextmanager
def progress(description: str, total: float | None = None, *, in_bytes: bool = False) -> Iterator[Callable[..., None]]:
    """Yield `advance(n=1)`; a no-op unless a person watches stderr."""
    if not shown():
        yield lambda n=1: None
        return
    amount = DownloadColumn() if in_bytes else TaskProgressColumn()
    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), *([amount] if total else []),
               TimeElapsedColumn()]
    console = Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")))
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


@contextmanager
def reading(path: str, description: str) -> Iterator[Iterator[bytes]]:
    """The lines of the file at `path`, with a bar that follows the bytes read."""
    with open(path, "rb") as f, progress(description, os.fstat(f.fileno()).st_size, in_bytes=True) as advance:
        def lines() -> Iterator[bytes]:
            for line in f:
                advance(len(line))
                yield line

        yield lines()
