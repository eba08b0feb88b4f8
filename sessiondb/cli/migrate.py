"""`sessiondb migrate --from A --to B`: move every session from one store to another.

Either side is a store location (a file path, a `postgresql://` URL) or the name of a
profile of the chosen home. The sessions are streamed: an export of the source read one
session at a time (in one snapshot each) feeds an import into the target, which stores
each session in one transaction and only what it lacks (by uid). So memory stays
constant, an interrupted migration leaves whole sessions behind it, and running it again
completes it without storing anything twice. The source is never written.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Iterable, Iterator

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from .. import home as homes
from .. import open_store
from ..errors import InvalidInput, SessionDBError
from ..store.contract import Store
from . import render
from .context import CliContext
from .sessions import json_option


def _store(ctx: CliContext, where: str) -> Store:
    """A location (URL or path) or, when `where` is a bare profile name, that profile's store."""
    try:
        if "://" in where or "/" in where or where.endswith(".db"):
            return open_store(where)
        return open_store(home=ctx.home, profile=homes.validate_profile(where))
    except SessionDBError as exc:
        raise click.ClickException(f"{where}: {exc}") from None


def _counted(records: Iterable[dict[str, Any]], progress: Progress | None, task: Any,
             counts: dict[str, int]) -> Iterator[dict[str, Any]]:
    for record in records:
        if record.get("type") == "message":
            counts["messages"] += 1
        yield record
        if record.get("type") == "end":
            counts["sessions"] += 1
            if progress is not None:
                progress.advance(task)


@click.command("migrate")
@click.option("--from", "source_at", required=True, metavar="PATH_OR_PROFILE",
              help="The store to copy from: a path, a URL or a profile name.")
@click.option("--to", "target_at", required=True, metavar="URL_OR_PATH",
              help="The store to copy into: a URL, a path or a profile name (created if new).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar (default: when stderr is a terminal and not --json).")
@json_option
@click.pass_obj
def migrate(ctx: CliContext, source_at: str, target_at: str, progress: bool | None, as_json: bool) -> None:
    """Copy every session, message and usage row of one store into another, resumably.

    Run it again after an interruption: what the target already holds is skipped.
    """
    started = time.monotonic()
    with _store(ctx, source_at) as source, _store(ctx, target_at) as target:
        if source.location == target.location:
            raise click.ClickException(str(InvalidInput("--from and --to name the same store; nothing to do")))
        total = ctx.call(source.stats).sessions
        show = progress if progress is not None else (sys.stderr.isatty() and not as_json)
        counts = {"sessions": 0, "messages": 0}
        bar = Progress(TextColumn("migrating"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                       transient=True, disable=not show, console=Console(stderr=True))
        with bar:
            task = bar.add_task("sessions", total=total)
            stream = ctx.call(source.export)
            try:
                report = ctx.call(target.import_records, _counted(stream, bar, task, counts))
            finally:
                stream.close()
    summary = {"from": source.location, "to": target.location, "sessions_read": counts["sessions"],
               "messages_read": counts["messages"], **report.to_dict(),
               "seconds": round(time.monotonic() - started, 3)}
    if as_json:
        render.emit_json(summary)
        return
    click.echo(
        f"migrated {counts['sessions']} session(s) from {source.location} to {target.location} in "
        f"{summary['seconds']:.1f} s: {report.sessions_created} new, {report.sessions_merged} already there; "
        f"{report.messages_imported} message(s) copied, {report.messages_skipped} already there; "
        f"{report.usage_rows_imported} usage row(s)")
    if report.detached:
        click.echo(f"{len(report.detached)} session(s) lost their parent link: " + ", ".join(report.detached),
                   err=True)
