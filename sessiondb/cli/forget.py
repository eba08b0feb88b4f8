"""`sessiondb forget`: erase conversations from every copy sessiondb made, and show the
receipt that proves it by a scan of the raw files (S-55).

Asks first, naming how much would go, unless --yes or --dry-run. Exits 1 when the
receipt says a copy remains (a file still holding erased text, or a backup holding one),
so a script notices; a clean receipt, nothing matched and a dry run exit 0.
"""

from __future__ import annotations

import sys

import click

from ..model import ForgetReceipt
from .context import CliContext
from .output import JsonOutput, json_option
from .periods import TIME
from .sessions import complete_session, resolve


@click.command()
@click.option("--user", "user_id", metavar="ID", help="The conversations of this user.")
@click.option("--session", "session_ref", metavar="ID", shell_complete=complete_session,
              help="The conversation this session belongs to (id, prefix or title), with its branches.")
@click.option("--source", metavar="NAME", help="The conversations from this source (cli, telegram, ...).")
@click.option("--before", type=TIME, help="Only conversations whose every session was last active before TIME.")
@click.option("--dry-run", is_flag=True, help="Say what would be removed; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def forget(ctx: CliContext, user_id: str | None, session_ref: str | None, source: str | None,
           before: float | None, dry_run: bool, yes: bool, as_json: JsonOutput | None) -> None:
    """Erase conversations everywhere sessiondb copied them, and prove it.

    Takes the conversations every selector given matches, whole (with their branches),
    removes everything stored for them, then scans the store's files for their text.
    Exits 1 when a copy remains: the receipt names each file and what to do.
    """
    with ctx.open() as store:
        session_id = None if session_ref is None else resolve(ctx, store, session_ref).id
        selectors = dict(user_id=user_id, session_id=session_id, source=source, before=before)
        if not dry_run and not yes:
            preview = ctx.call(store.forget, **selectors, dry_run=True)
            if preview.sessions:
                click.confirm(f"Erase {len(preview.sessions)} session(s) and {preview.messages} message(s)? "
                              "This cannot be undone", abort=True, err=True)
        receipt = ctx.call(store.forget, **selectors, dry_run=dry_run)
    receipt.remaining = [ctx.spelled(line) for line in receipt.remaining]
    receipt.copies = [(path, ctx.spelled(command)) for path, command in receipt.copies]
    if as_json:
        as_json.emit(receipt.to_dict())
    else:
        _render(receipt)
    sys.exit(0 if receipt.clean else 1)  # a dry run scans nothing: its receipt is clean


def _render(receipt: ForgetReceipt) -> None:
    click.echo(receipt.summary())
    for line in receipt.remaining:
        click.echo(f"  {line}")
    for path, command in receipt.copies:
        click.echo(f"  {path} holds a copy: {command}")
    for path in receipt.copies_removed:
        click.echo(f"  removed {path}: it held erased text, and every row of it was in the store too")
    for note in receipt.notes:
        click.echo(f"note: {note}")
