"""`sessiondb turns list SESSION`: a session's turns and why each one ended (S-50..S-52)."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from ..exports import when
from ..guidance import explain_turn
from ..model import Turn
from . import render
from .context import CliContext
from .output import JsonOutput, json_option
from .sessions import chosen, session_ref


def turn_row(turn: Turn) -> dict:
    """A turn as JSON, with the sentence a person reads about its end."""
    return {**turn.to_dict(), "explanation": explain_turn(turn.reason) if turn.reason else None}


@click.group()
def turns() -> None:
    """The turns of a session: who stopped each one, and its failed edits."""


@turns.command("list")
@session_ref
@click.option("--limit", type=click.IntRange(1, 1000), default=100, show_default=True,
              help="The newest this many turns.")
@json_option
@click.pass_obj
def list_turns(ctx: CliContext, ref: str | None, latest: bool, limit: int, as_json: JsonOutput | None) -> None:
    """A session's turns, oldest first (ID: an id, a unique id prefix or a title; -c: the latest session)."""
    with ctx.open() as store:
        found = ctx.call(store.turns, chosen(ctx, store, ref, latest).id, limit=limit)
    if as_json:
        as_json.emit([turn_row(t) for t in found])
        return
    if not found:
        click.echo("no turns recorded for this session")
        return
    table = Table(show_edge=False, pad_edge=False)
    for name in ("started", "outcome", "reason", "why", "failed edits", "id"):
        table.add_column(name, no_wrap=name not in ("why",))
    for t in found:
        table.add_row(when(t.started_at), t.outcome or "running", Text(t.reason or ""),
                      Text(explain_turn(t.reason) if t.reason else ""), str(len(t.receipts)), t.id)
    render.console().print(table)
