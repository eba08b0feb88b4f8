"""`sessiondb import --from TOOL [PATH] [--watch]`: other agent tools' histories into the store.

The face of `sessiondb.importers.import_from` and `watch`: it parses, calls and renders.
On a terminal a progress line counts sessions and messages as they are stored (and the
files read of how many there are, for a tool that keeps a file per session); a
report follows (sessions, messages, skipped, malformed, each malformed line with its
file and line number on stderr). With --watch it keeps following the source until
Ctrl-C, printing what each pass that found something stored.
"""

from __future__ import annotations

import os
import sys

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from .. import importers
from ..errors import SessionDBError
from ..importers.core import ImportReport
from .context import CliContext
from .output import JsonOutput, json_option


@click.command("import")
@click.option("--from", "source", required=True, type=click.Choice(list(importers.SOURCES)),
              help="The tool whose history to import.")
@click.argument("path", required=False, type=click.Path(exists=True))
@click.option("--watch", is_flag=True, help="Keep following the history as the tool writes it, until Ctrl-C.")
@click.option("--interval", type=click.FloatRange(0.01, 3600), default=1.0, show_default=True,
              help="With --watch: seconds between looks at the source.")
@json_option
@click.pass_obj
def import_history(ctx: CliContext, source: str, path: str | None, watch: bool, interval: float,
                   as_json: JsonOutput | None) -> None:
    """Import another agent tool's history (PATH, or the tool's default location).

    Importing again stores nothing twice. A line or row that cannot be read is skipped
    and reported with its file and line; the rest is imported.
    """
    try:
        root = importers.location(source, path)  # before any store is made: a missing history makes none
    except SessionDBError as exc:
        raise click.ClickException(" ".join(str(exc).split())) from None
    with ctx.importing() as store:
        try:
            with _progress(as_json) as progress:
                if watch:
                    if not as_json:
                        click.echo(f"watching {source} history at {root} (Ctrl-C stops)", err=True)
                    report = importers.watch(store, source, root, interval=interval, progress=progress,
                                             on_pass=None if as_json else _pass_line)
                else:
                    report = importers.import_from(store, source, root, progress=progress)
        except SessionDBError as exc:
            raise click.ClickException(" ".join(str(exc).split())) from None
    if as_json:
        as_json.emit(report.to_dict())
        return
    for bad in report.malformed:
        where = f"{bad['file']}:{bad['line']}" if bad["line"] is not None else bad["file"]
        click.echo(f"skipped {where}: {bad['reason']}", err=True)
    click.echo(_summary(report))


def _summary(report: ImportReport) -> str:
    text = (f"imported {report.sessions} {report.source} session(s) ({report.sessions_created} new): "
            f"{report.messages} message(s), {report.skipped} already stored and skipped, "
            f"{len(report.malformed)} malformed")
    if report.conflicts:
        text += f", {report.conflicts} changed at the source since stored (kept as stored)"
    return text


def _pass_line(report: ImportReport) -> None:
    if report.messages or report.malformed:
        click.echo(f"+{report.messages} message(s) in {report.sessions} session(s), "
                   f"{len(report.malformed)} malformed", err=True)


class _progress:
    """A progress line on stderr when it is a terminal (and not --json): a callback that
    shows the running counts, and the files read of all there are when the tool keeps a
    file per session (a bar), or None."""

    def __init__(self, quiet: bool) -> None:
        self.bar = None if quiet or not sys.stderr.isatty() else Progress(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR"))), transient=True)

    def __enter__(self):
        if self.bar is None:
            return None
        self.bar.start()
        task = self.bar.add_task("reading", total=None)

        def update(report: ImportReport) -> None:
            self.bar.update(task, description=f"{report.sessions} session(s), {report.messages} new message(s), "
                                              f"{report.skipped} already stored",
                            total=report.files, completed=report.files_read)

        return update

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()
