"""Importing other agent tools' histories into a store: `import_from`, and `watch` to follow them.

    from sessiondb import open_store
    from sessiondb.importers import import_from
    with open_store() as store:
        report = import_from(store, "claude-code")        # ~/.claude/projects
        print(report.sessions, report.messages, report.skipped, report.malformed)

One module per source reads its format and yields events (core.py); writer.py stores
them through the public Store contract. A source's sessions are stored with the source
tool's name as their `source` (`claude-code`, `codex`, `llm`, `hermes`, `openai-agents`,
`langchain`), and its project, cwd and original ids in their metadata.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Callable

from ..errors import InvalidInput, NotFound
from ..store.contract import Store
from . import checkpoint, claude_code, codex, hermes, langchain, llm, openai_agents
from .core import ImportReport
from .files import files_under
from .writer import Writer

SOURCES = {m.NAME: m for m in (claude_code, codex, llm, hermes, openai_agents, langchain)}
Progress = Callable[[ImportReport], None]


def location(source: str, path: str | os.PathLike[str] | None = None) -> Path:
    """The history to read: `path`, or the source tool's default location under $HOME."""
    module = SOURCES.get(source)
    if module is None:
        raise InvalidInput(f"unknown source {source!r}: choose one of {', '.join(SOURCES)}")
    if path is None:
        default = module.default_path(Path.home())
        if default is None:
            raise InvalidInput(f"{source} keeps its history where the application says: give the database's PATH")
        path = default
    root = Path(os.path.expanduser(os.fspath(path)))
    if not root.exists():
        raise NotFound(f"no {source} history at {root}: give its PATH")
    return root


def import_from(store: Store, source: str, path: str | os.PathLike[str] | None = None, *,
                progress: Progress | None = None) -> ImportReport:
    """Import everything `source` has at `path` (or its default location); again stores nothing twice."""
    root = location(source, path)
    report = ImportReport(source, str(root))
    patterns = getattr(SOURCES[source], "PATTERNS", None)  # a tool that keeps a file per session
    report.files = len(files_under(root, patterns)) if patterns and progress else None
    _pass(store, source, root, {}, report, progress, final=True)
    return report


def watch(store: Store, source: str, path: str | os.PathLike[str] | None = None, *, interval: float = 1.0,
          stop: threading.Event | None = None, passes: int | None = None, progress: Progress | None = None,
          on_pass: Progress | None = None) -> ImportReport:
    """Follow `source` as it writes: a pass every `interval` seconds until `stop` is set, `passes`
    passes were made, or KeyboardInterrupt (Ctrl-C). Each pass reads only what is new since the
    checkpoint (imports/ beside the store), which is saved after every pass, so a restart resumes."""
    root = location(source, path)
    saved_at = checkpoint.path_for(store, source, root)
    cursor = checkpoint.load(saved_at, source, root)
    total = ImportReport(source, str(root))
    stop = stop or threading.Event()
    made = 0
    try:
        while True:
            report = ImportReport(source, str(root))
            _pass(store, source, root, cursor, report, progress, final=False)
            checkpoint.save(saved_at, source, root, cursor)
            total.add(report)
            made += 1
            if on_pass:
                on_pass(report)
            if (passes is not None and made >= passes) or stop.wait(interval):
                break
    except KeyboardInterrupt:
        pass  # Ctrl-C: the cursor only holds what is stored, so saving it below loses nothing
    finally:
        checkpoint.save(saved_at, source, root, cursor)
    return total


def _pass(store: Store, source: str, root: Path, cursor: dict, report: ImportReport,
          progress: Progress | None, *, final: bool) -> None:
    writer = Writer(store, report, progress)
    for event in SOURCES[source].read(root, cursor, final=final):
        writer.handle(event)
    writer.finish()
