"""`sessiondb sessions export | import`: lossless JSONL (and Markdown to read), streamed.

Export writes the target through sessiondb.files (private, and renamed into place only
when complete), so an interrupted export never leaves a file that looks whole. Import reads the
file twice: a dry run that validates every record (and checks titles and ids against the
store) while writing nothing, then the import itself, so a malformed file changes nothing.
"""

from __future__ import annotations

import os
import sys
from contextlib import closing, nullcontext
from pathlib import Path

import click

from ..errors import SessionDBError
from .. import exports
from ..files import private_file
from . import progress
from .context import CliContext
from .output import JsonOutput, json_option
from .sessions import chosen, complete_session, resolve, sessions


@sessions.command("export")
@click.argument("refs", metavar="[ID]...", nargs=-1, shell_complete=complete_session)
@click.option("--session", "session_refs", metavar="ID", multiple=True, shell_complete=complete_session,
              help="A session to export (repeatable); default: every session.")
@click.option("-c", "--latest", is_flag=True, help="Export the most recently active session (with any named).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "md"]), default="jsonl", show_default=True,
              help="jsonl: lossless, for import. md: Markdown, for reading.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write here instead of stdout.")
@json_option
@click.pass_obj
def export(ctx: CliContext, refs: tuple[str, ...], session_refs: tuple[str, ...], latest: bool, fmt: str,
           output: str | None, as_json: JsonOutput | None) -> None:
    """Export sessions: every column, every message in every state, lineage and usage.

    Streamed in constant memory, never capped. With -o and --json, print a JSON summary.
    """
    wanted = list(refs) + list(session_refs)
    counts = {"sessions": 0, "messages": 0}

    def counted(records, advance):
        for record in records:
            kind = record.get("type")
            if kind == "session":
                counts["sessions"] += 1
                advance()
            elif kind == "message":
                counts["messages"] += 1
            yield record

    with ctx.open() as store:
        ids = None  # every session
        if wanted or latest:
            ids = [resolve(ctx, store, ref).id for ref in wanted] + ([chosen(ctx, store, None, True).id] if latest else [])
        # A bar only for a file: on stdout the export is the output.
        total = (len(ids) if ids is not None else ctx.call(store.stats).sessions) if output and progress.shown() else None
        bar = progress.progress(f"exporting to {output}", total) if output else nullcontext(lambda: None)
        stream = ctx.call(store.export, ids)
        with closing(stream), bar as advance:  # finish the store's read before the store closes
            records = counted(stream, advance)
            lines = _guarded(exports.jsonl(records) if fmt == "jsonl" else exports.markdown(records))
            if output is None:
                _to_stdout(lines)
                return
            target = _write_file(Path(output), lines)
    summary = {"output": str(target), "format": fmt, **counts}
    if as_json:
        as_json.emit(summary)
    else:
        click.echo(f"exported {counts['sessions']} session(s), {counts['messages']} message(s) to {target}")


def _to_stdout(lines) -> None:
    out = sys.stdout
    try:
        for line in lines:
            out.write(line)
        out.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, without a traceback at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def _write_file(target: Path, lines) -> Path:
    try:
        with private_file(target) as f:
            for line in lines:
                f.write(line)
    except OSError as exc:
        raise click.ClickException(f"cannot write {target}: {exc.strerror or exc}; choose another -o path") from None
    return target


@sessions.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--dry-run", is_flag=True, help="Validate and count only; write nothing.")
@json_option
@click.pass_obj
def import_(ctx: CliContext, file: str, dry_run: bool, as_json: JsonOutput | None) -> None:
    """Import a sessiondb JSONL export. Sessions already stored gain only what they lack.

    The whole file is validated first; any bad record stops the import with its line
    number, before anything is written.
    """
    with ctx.importing(dry_run=True) as store:
        report = _import(ctx, store, file, dry_run=True)
    if not dry_run:  # the whole file passed: only now is a new store made
        with ctx.importing() as store:
            report = _import(ctx, store, file, dry_run=False)
    if as_json:
        as_json.emit({**report.to_dict(), "dry_run": dry_run})
        return
    verb = "would import" if dry_run else "imported"
    click.echo(
        f"{verb} {report.sessions_created + report.sessions_merged} session(s) "
        f"({report.sessions_created} new, {report.sessions_merged} already stored): "
        f"{report.messages_imported} message(s), {report.messages_skipped} already stored and skipped; "
        f"{report.usage_rows_imported} usage row(s)"
    )
    if report.detached:
        click.echo(f"{len(report.detached)} session(s) lost their parent link (the parent is not in the store): "
                   + ", ".join(report.detached), err=True)


def _guarded(lines):
    """The lines, with a failure while reading the store turned into a one-line error."""
    try:
        yield from lines
    except SessionDBError as exc:
        raise click.ClickException(" ".join(str(exc).split())) from None


def _import(ctx: CliContext, store, file: str, *, dry_run: bool):
    try:
        with progress.reading(file, "checking" if dry_run else "importing") as lines:
            return ctx.call(store.import_records, lines, dry_run=dry_run)
    except OSError as exc:
        raise click.ClickException(f"cannot read {file}: {exc.strerror or exc}") from None
