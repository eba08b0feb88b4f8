"""`sessions optimize | vacuum | prune` and `backup`: maintenance.

Each rewrite (optimize, vacuum) first lists every other process holding the store and exits
1 with the remedy; --force proceeds with a warning; --dry-run previews and is never refused
(S-19). A prune deletes beside live writers and is never refused.
"""

from __future__ import annotations

from functools import partial

import click

from . import render
from .context import CliContext
from .output import JsonOutput, json_option
from .periods import DurationParam


def _report(report, as_json: JsonOutput | None) -> None:
    if as_json:
        as_json.emit(report.__dict__)
        return
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    verb = "would remove" if report.dry_run else "removed"
    if report.action == "prune":
        click.echo(f"{verb} {len(report.sessions)} session(s)")
        for sid in report.sessions:
            click.echo(f"  {sid}")
    tense = "dry run, nothing changed" if report.dry_run else "done"
    click.echo(f"{report.action}: {tense}; size {render.size(report.bytes_before)} -> {render.size(report.bytes_after)}")


def _maintenance_options(command, *, refused_while_held: bool = True):
    command = json_option(command)
    command = click.option("--dry-run", is_flag=True, help="Preview only; never refused.")(command)
    # A prune, which runs beside other processes, has no use for --force: accepted, hidden, for old scripts.
    command = click.option("--force", is_flag=True, hidden=not refused_while_held,
                           help="Run even while other processes hold the store.")(command)
    return command


@click.command()
@_maintenance_options
@click.pass_obj
def optimize(ctx: CliContext, force: bool, dry_run: bool, as_json: JsonOutput | None) -> None:
    """Merge the search index, refresh statistics and checkpoint the WAL."""
    with ctx.open() as store:
        _report(ctx.call(store.optimize, force=force, dry_run=dry_run), as_json)


@click.command()
@_maintenance_options
@click.pass_obj
def vacuum(ctx: CliContext, force: bool, dry_run: bool, as_json: JsonOutput | None) -> None:
    """Rewrite the store compactly, returning free pages to the disk."""
    with ctx.open() as store:
        _report(ctx.call(store.vacuum, force=force, dry_run=dry_run), as_json)


@click.command()
@click.option("--older-than", type=DurationParam(bare="d"), metavar="DAYS",
              help="Remove sessions inactive for more than DAYS days (or a period: 12h, 2w).")
@click.option("--never-active", is_flag=True,
              help="Remove sessions opened by a key and never used, older than 30 days.")
@click.option("--include-pinned", is_flag=True, help="With --older-than, pinned sessions go too.")
@click.option("--include-archived", is_flag=True, help="With --older-than, archived sessions go too.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@partial(_maintenance_options, refused_while_held=False)
@click.pass_obj
def prune(ctx: CliContext, older_than: float | None, never_active: bool, include_pinned: bool,
          include_archived: bool, yes: bool, force: bool, dry_run: bool, as_json: JsonOutput | None) -> None:
    """Delete old or never-used sessions with their messages, beside live writers."""
    if older_than is None and not never_active:
        raise click.UsageError("say what to prune: --older-than DAYS, --never-active, or both")
    options = dict(older_than=older_than, never_active=never_active,
                   include_pinned=include_pinned, include_archived=include_archived)
    with ctx.open() as store:
        if not dry_run and not yes:
            preview = ctx.call(store.prune, **options, dry_run=True)
            if not preview.sessions:
                _report(preview, as_json)
                return
            click.confirm(f"Delete {len(preview.sessions)} session(s) and their messages?", abort=True)
        _report(ctx.call(store.prune, **options, dry_run=dry_run), as_json)


@click.command()
@click.argument("destination", type=click.Path(dir_okay=False))
@json_option
@click.pass_obj
def backup(ctx: CliContext, destination: str, as_json: JsonOutput | None) -> None:
    """Write a consistent copy of the store to DESTINATION while writers keep running."""
    with ctx.open() as store:
        size = ctx.call(store.backup, destination)
    if as_json:
        as_json.emit({"store": store.location, "backup": destination, "bytes": size})
    else:
        click.echo(f"backed up {store.location} to {destination} ({render.size(size)})")


@click.group()
def vectors() -> None:
    """The vectors of meaning recall finds messages by (computed by an embedder)."""


@vectors.command()
@click.option("--embedder", metavar="NAME",
              help="The embedder that computes the vectors (wordllama, sentence-transformers:PATH); "
                   "default $SESSIONDB_EMBEDDER.")
@json_option
@click.pass_obj
def rebuild(ctx: CliContext, embedder: str | None, as_json: JsonOutput | None) -> None:
    """Compute every message's vector again with an embedder (after changing embedder)."""
    with ctx.open(embedder=embedder) as store:
        held = ctx.call(store.rebuild_vectors)
    if as_json:
        as_json.emit({"store": store.location, "vectors": held})
    else:
        click.echo(f"{store.location}: {held:,} message(s) have a vector")
