"""`doctor`, `recover` and `restore-captured`: the faces of a store's Doctor, Salvageable and
Captures capabilities.

`doctor` examines the profile's store without opening it through the library (a damaged
file must not get a writer); `--repair` repairs what can be repaired in place. `recover`
salvages a damaged file into a new one and never touches the source. `restore-captured`
brings back what retired-WAL captures and the spool hold (store/captured.py).
"""

from __future__ import annotations

import re
import sys
from contextlib import nullcontext
from typing import Any

import click

from ..errors import SessionDBError, classify
from ..guidance import error_code
from ..store.captured import RestoreReport, restore_captured as restore
from ..store.optional import Doctor, Salvageable
from ..store.locations import open_doctor
from . import progress, render
from .context import CliContext, CliError
from .output import JsonOutput, json_option


def _doctor(ctx: CliContext) -> Doctor:
    ctx.require_profile()
    with ctx.refusals():
        return open_doctor(**ctx.where())


SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def _render(report: Any) -> None:
    echo = click.echo
    if report.problems:  # what a person needs first: what is wrong, and what to do
        echo(f"problem      {SENTENCE_END.split(report.problems[0], maxsplit=1)[0]}")
        if report.steps:
            echo(f"first step   {report.steps[0]}")
    if hasattr(report, "server_version"):  # a store on a server (store/postgres/doctor.py)
        _server_state(report)
    else:
        _file_state(report)
    echo(f"damage       {report.damage}")
    shown = 8  # the rest are in --json
    for finding in report.findings[:shown]:
        echo(f"  - {finding}")
    if len(report.findings) > shown:
        echo(f"  ... and {len(report.findings) - shown} more (--json lists them)")
    if report.repair:
        for action in report.repair.get("actions", []):
            echo(f"fix: {action}")
    for i, step in enumerate(report.steps, 1):
        echo(f"next {i}. {step}")
    echo("healthy" if report.healthy else "problems found")


def _server_state(report: Any) -> None:
    echo = click.echo
    echo(f"store        {report.location}")
    if not report.exists:
        echo("             does not exist")
    echo(f"server       PostgreSQL {report.server_version}")
    if report.migrations:
        echo(f"migrations   {report.migrations['applied']} applied, {len(report.migrations['pending'])} pending")
    echo(f"size         {render.size(report.size)}")
    echo(f"connections  {', '.join(report.connections) or 'none'} (sessiondb's, on this schema)")
    if report.checked:
        echo(f"checked      {report.checked.get('sessions', 0)} sessions, {report.checked.get('messages', 0)} messages")
    echo(f"spool        {report.spool_pending} batch(es) pending on this host")
    for note in report.notes:
        echo(f"note         {note}")


def _file_state(report: Any) -> None:
    echo = click.echo
    echo(f"store        {report.path}")
    if not report.exists:
        echo("             does not exist")
    echo(f"sqlite       {report.sqlite_version}; journal {report.journal_mode or '?'}; "
         f"filesystem {report.filesystem or '?'}")
    ident = report.identity
    if ident:
        echo(f"identity     device {ident.get('device')} inode {ident.get('inode')} "
             f"generation {ident.get('generation', '?')}")
    echo(f"size         {render.size(report.size)}; WAL {render.size(report.wal_bytes)}; "
         f"free pages {report.free_pages if report.free_pages is not None else '?'}")
    echo(f"holders      {', '.join(report.holders) or 'none'}")
    if report.disk:
        echo(f"disk         {render.size(report.disk['free'])} free, {render.size(report.disk['needed'])} needed"
             + ("; FULL" if report.disk["full"] else ""))
    check = report.integrity
    if check:
        state = "complete" if check.get("complete") else "partial"
        echo(f"integrity    {check.get('check')} ({state}): {'ok' if not check.get('errors') else 'ERRORS'}")
    echo(f"search index {'stale' if report.index_stale else 'live'}")
    echo(f"spool        {report.spool_pending} batch(es) pending")
    echo(f"retired WAL  {len(report.retired_wal)} capture(s)")
    echo(f"backups      {len(report.backups)} forensic backup(s)")
    if report.repair_failures:
        echo(f"repairs      {report.repair_failures} failed pass(es) on this file")


@click.command()
@click.option("--repair", "fix", is_flag=True, help="Replay the spool, rebuild the search index, repair the schema, "
              "checkpoint; never while another process holds a store file (a store on a server is "
              "repaired beside its writers).")
@click.option("--fix", "fix_by_old_name", is_flag=True, hidden=True,
              help="The previous release's name of --repair, until the next (docs/names.md).")
@click.option("--deep", is_flag=True, help="Run the full integrity check, however long it takes.")
@json_option
@click.pass_obj
def doctor(ctx: CliContext, fix: bool, fix_by_old_name: bool, deep: bool, as_json: JsonOutput | None) -> None:
    """Examine the store (and with --repair, repair what can be repaired in place)."""
    if fix_by_old_name:
        click.echo("note: `sessiondb doctor --fix` is now `sessiondb doctor --repair`; the old name goes in the "
                   "next release", err=True)
        fix = True
    store = _doctor(ctx)
    try:
        # The full integrity check can take minutes on a large store: show that it runs.
        with progress.progress("checking integrity (--deep)") if deep else nullcontext():
            report = store.repair(deep=deep) if fix else store.examine(deep=deep)
    except SessionDBError as exc:  # refused (held, budget spent, no room for a backup): nothing changed
        error = ctx.error(exc, " ".join(str(exc).split()))
        detail = error.detail if isinstance(error.detail, dict) else {}
        if fix:  # the repair was refused: say what state the store is left in
            detail = {"damage": store.examine().damage, **detail}
        error.detail = {"store": store.location, **detail}
        raise error from None
    report.steps = [ctx.respelled(step) for step in report.steps]
    if as_json:
        as_json.emit(report.to_dict())
    else:
        _render(report)
    sys.exit(0 if report.healthy else 1)


@click.command()
@click.option("--source", required=True, type=click.Path(dir_okay=False, exists=True),
              help="The damaged database file (never modified).")
@click.option("--output", type=click.Path(dir_okay=False), help="The new database to write (must not exist).")
@click.option("--inspect-only", is_flag=True, help="Only report what could be salvaged; write nothing.")
@json_option
def recover(source: str, output: str | None, inspect_only: bool, as_json: JsonOutput | None) -> None:
    """Rebuild a new store from whatever is readable in a damaged one."""
    if output is None and not inspect_only:
        raise click.UsageError("say where the recovered store goes (--output NEW), or pass --inspect-only")
    try:
        damaged = open_doctor(source)
        if not isinstance(damaged, Salvageable):
            raise CliError(f"{damaged.location}: this store's backend has no recovery of its own")
        with progress.progress("reading what survives" if inspect_only else f"salvaging into {output}"):
            report = damaged.recover(output, inspect_only=inspect_only)
    except SessionDBError as exc:
        raise CliError(" ".join(str(exc).split()), error_code(exc, classify(exc))) from None
    if as_json:
        as_json.emit(report.to_dict())
    else:
        verb = "readable" if inspect_only else "kept"
        click.echo(f"source   {report.source} (not modified)")
        if report.output:
            click.echo(f"output   {report.output}")
        click.echo(f"sessions {verb} {report.sessions_kept}, lost ~{report.sessions_lost_estimate}"
                   + (f", {report.sessions_stubbed} recreated as stubs" if report.sessions_stubbed else ""))
        click.echo(f"messages {verb} {report.messages_kept}, lost ~{report.messages_lost_estimate}")
        for note in report.notes:
            click.echo(f"note: {note}")
    sys.exit(0 if report.tables else 1)  # losses are reported, not failures; nothing readable is


@click.command("restore-captured")
@click.option("--other-generations", is_flag=True,
              help="Also bring back what was captured from, or refused by, an earlier generation of the store "
                   "(a file since copied or moved over it).")
@click.option("--into", metavar="PATH", type=click.Path(dir_okay=False),
              help="Bring everything into this store instead (created if new), whatever generation it came from.")
@json_option
@click.pass_obj
def restore_captured(ctx: CliContext, other_generations: bool, into: str | None, as_json: JsonOutput | None) -> None:
    """Bring back every message captured in a retired WAL or kept in the spool; running it
    again stores nothing twice."""
    ctx.require_profile()
    with ctx.refusals():
        report = restore(**ctx.where(), into=into, other_generations=other_generations)
    if as_json:
        as_json.emit(report.to_dict())
    else:
        _render_restore(report)
    sys.exit(0 if report.complete else 1)


def _render_restore(report: RestoreReport) -> None:
    echo = click.echo
    echo(f"store        {report.store}")
    echo(f"restored     {report.restored} message(s); {report.already_there} already there")
    for sid, counts in report.sessions.items():
        if counts["restored"] or counts["skipped"]:
            made = " (session created)" if counts["created"] else ""
            echo(f"  session {sid}: {counts['restored']} restored, {counts['already_there']} already there{made}")
            for reason in counts["skipped"]:
                echo(f"    skipped {reason}")
    echo(f"captures     {sum(c['outcome'] == 'restored' for c in report.captures)} of {len(report.captures)} "
         "brought back")
    echo(f"spool        {sum(b['outcome'] == 'restored' for b in report.spool)} of {len(report.spool)} "
         "batch(es) brought back")
    for left in report.left:
        echo(f"left         {left}")
    echo("complete" if report.complete else "not everything was brought back")
