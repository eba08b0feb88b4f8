"""`sessiondb checkpoints list|diff|restore`: an agent's checkpoints of a session's working
tree (S-53). Where the session's tools run in a container, diff and restore are refused
with the reason, exit status 1, in the library's own words."""

from __future__ import annotations

import click

from ..exports import when
from ..turns import Checkpoints
from .context import CliContext
from .output import JsonOutput, json_option
from .sessions import chosen, complete_session, resolve, session_ref


@click.group()
def checkpoints() -> None:
    """Checkpoints of the files an agent changed: list, diff, restore."""


@checkpoints.command("list")
@session_ref
@json_option
@click.pass_obj
def list_checkpoints(ctx: CliContext, ref: str | None, latest: bool, as_json: JsonOutput | None) -> None:
    """A session's checkpoints, oldest first (ID, or -c: the latest session)."""
    with ctx.open() as store:
        cps = Checkpoints(store)
        sid = chosen(ctx, store, ref, latest).id
        found, env = ctx.call(cps.list, sid), ctx.call(cps.environment, sid)
    if as_json:
        as_json.emit({"environment": {"backend": env.backend, "refusal": env.refusal},
                      "items": [c.to_dict() for c in found]}, within="items")
        return
    if not env.on_host:
        click.echo(f"diff and restore are refused: {env.refusal}")
    for c in found:
        click.echo(f"{c.id}\t{when(c.created_at)}\t{len(c.files)} files\t{c.label}\t{c.tree}")
    if not found:
        click.echo("no checkpoints for this session")


@checkpoints.command("diff")
@click.argument("session", shell_complete=complete_session)
@click.argument("checkpoint")
@json_option
@click.pass_obj
def diff(ctx: CliContext, session: str, checkpoint: str, as_json: JsonOutput | None) -> None:
    """What changed in the tree since CHECKPOINT (a unified diff of text files)."""
    with ctx.open() as store:
        found = ctx.call(Checkpoints(store).diff, resolve(ctx, store, session).id, checkpoint)
    if as_json:
        as_json.emit(found.to_dict())
        return
    for change in found.changes:
        click.echo(change.patch if change.patch else f"{change.change}: {change.path} (binary)\n", nl=False)
    if not found.changes:
        click.echo(f"nothing changed since checkpoint {found.checkpoint}")


@checkpoints.command("restore")
@click.argument("session", shell_complete=complete_session)
@click.argument("checkpoint")
@click.option("--force", is_flag=True, help="Overwrite files changed since the agent's own last write.")
@json_option
@click.pass_obj
def restore(ctx: CliContext, session: str, checkpoint: str, force: bool, as_json: JsonOutput | None) -> None:
    """Put the tree back as CHECKPOINT has it, after checkpointing it as it is now."""
    with ctx.open() as store:
        report = ctx.call(Checkpoints(store).restore, resolve(ctx, store, session).id, checkpoint, force=force)
    if as_json:
        as_json.emit(report.to_dict())
        return
    click.echo(f"restored checkpoint {report.checkpoint}; the tree as it was is checkpoint {report.checkpoint_before}")
    for f in report.files:
        click.echo(f"{f.status}\t{f.path}")
