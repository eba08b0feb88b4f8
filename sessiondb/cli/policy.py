"""`sessiondb policy`: what the store keeps. Its retention rules (per source, and for every
other source) and legal holds are shown, set, cleared, placed and released here, and
`policy apply` removes what the rules take.

The rules live in the store, so the `policy apply --yes` of any host's cron applies the
same ones. `apply` is a dry run unless --yes; it exits 1 when the rules are refused (they
would remove every conversation they cover), with the sentence on stderr.
"""

from __future__ import annotations

import shlex
from typing import Any

import click

from ..model import Hold, Policies, Policy, PolicyReport
from . import render
from .context import CliContext, CliError
from .output import JsonOutput, json_option
from .periods import DURATION, spelled
from .sessions import complete_session, resolve

#: The rules of a Policy, each with how `show` says it.
RULES = (("inactive_after", "inactive after"), ("keep_last", "keep last"),
         ("compacted_after", "text of compacted originals after"), ("never_active_after", "never active after"))


@click.group(invoke_without_command=True)
@json_option
@click.pass_context
def policy(click_ctx: click.Context, as_json: JsonOutput | None) -> None:
    """What the store keeps: its retention rules and legal holds (alone: `policy show`)."""
    if click_ctx.invoked_subcommand is None:
        _show(click_ctx.obj, as_json)
    elif as_json:
        raise click.UsageError(f"put --json after the command: `policy {click_ctx.invoked_subcommand} --json`")


@policy.command()
@json_option
@click.pass_obj
def show(ctx: CliContext, as_json: JsonOutput | None) -> None:
    """The retention rules, per source and for every other source, and the legal holds."""
    _show(ctx, as_json)


def _show(ctx: CliContext, as_json: JsonOutput | None) -> None:
    with ctx.open() as store:
        found: Policies = ctx.call(store.policy)
    if as_json:
        as_json.emit(found.to_dict())
        return
    click.echo("Rules:")
    for rule in found.rules:
        click.echo(f"  {_rule(rule)} (set {render.ago(rule.updated_at)})")
    if not found.rules:
        click.echo("  no rules: everything is kept")
    click.echo("Legal holds:")
    for hold in found.holds:
        click.echo(f"  {_whose(hold.user_id, hold.session_id)}: {hold.reason} (placed {render.ago(hold.placed_at)})")
    if not found.holds:
        click.echo("  no holds")


@policy.command("set")
@click.option("--source", metavar="NAME",
              help="The rules of this source (default: of every source without rules of its own).")
@click.option("--inactive-after", type=DURATION,
              help="Remove a conversation last active longer ago than DURATION (90d, 12h, 30m, 2w or seconds).")
@click.option("--keep-last", type=int, metavar="N", help="Keep the newest N conversations; remove the older.")
@click.option("--compacted-after", type=DURATION,
              help="Drop the text of compacted originals older than DURATION (their rows stay).")
@click.option("--never-active-after", type=DURATION,
              help="Remove a session opened by a key and never used, older than DURATION.")
@click.option("--force", is_flag=True, help="Set them even if they would remove every conversation they cover.")
@json_option
@click.pass_obj
def set_rules(ctx: CliContext, source: str | None, inactive_after: float | None, keep_last: int | None,
              compacted_after: float | None, never_active_after: float | None, force: bool,
              as_json: JsonOutput | None) -> None:
    """Declare the retention rules of a source (replacing its earlier ones), and say what
    they would remove now."""
    if inactive_after is None and keep_last is None and compacted_after is None and never_active_after is None:
        raise click.UsageError("say what to keep: --inactive-after, --keep-last, --compacted-after or "
                               "--never-active-after (`policy clear` removes the rules)")
    with ctx.open() as store:
        rule = ctx.call(store.set_policy, source=source, inactive_after=inactive_after, keep_last=keep_last,
                        compacted_after=compacted_after, never_active_after=never_active_after, force=force)
        report = ctx.call(store.apply_policy, dry_run=True)
    if as_json:
        as_json.emit({"policy": rule.to_dict(), "report": report.to_dict()})
        return
    click.echo(f"set: {_rule(rule)}")
    click.echo(f"now: {report.summary()}")
    if report.removed or report.compacted_dropped:
        click.echo(ctx.spelled("`sessiondb policy apply` lists them; `sessiondb policy apply --yes` removes them"))


@policy.command()
@click.option("--source", metavar="NAME", help="The rules of this source (default: those of every other source).")
@json_option
@click.pass_obj
def clear(ctx: CliContext, source: str | None, as_json: JsonOutput | None) -> None:
    """Remove the retention rules of a source: its conversations are kept again (or fall
    under the rules of every other source)."""
    with ctx.open() as store:
        cleared = ctx.call(store.clear_policy, source=source)
    if as_json:
        as_json.emit({"source": source, "cleared": cleared})
    elif cleared:
        click.echo(f"cleared the rules of {_scope(source)}")
    else:
        click.echo(f"no rules of {_scope(source)}: nothing changed")


def _held_options(command: Any) -> Any:
    """--user ID | --session ID: whose conversations a hold covers."""
    command = click.option("--session", "session_ref", metavar="ID", shell_complete=complete_session,
                           help="The conversation this session belongs to (id, prefix or title).")(command)
    return click.option("--user", "user_id", metavar="ID", help="The conversations of this user.")(command)


def _one(user_id: str | None, session_ref: str | None) -> None:
    if (user_id is None) == (session_ref is None):
        raise click.UsageError("name whose conversations: --user ID or --session ID, one of them")


@policy.command()
@_held_options
@click.option("--reason", required=True, metavar="TEXT", help="Why they are held (a case, a request).")
@json_option
@click.pass_obj
def hold(ctx: CliContext, user_id: str | None, session_ref: str | None, reason: str,
         as_json: JsonOutput | None) -> None:
    """Place a legal hold: no rule and no forget removes these conversations until it is released."""
    _one(user_id, session_ref)
    with ctx.open() as store:
        session_id = None if session_ref is None else resolve(ctx, store, session_ref).id
        placed: Hold = ctx.call(store.hold, user_id=user_id, session_id=session_id, reason=reason)
    if as_json:
        as_json.emit(placed.to_dict())
        return
    named = f"--user {shlex.quote(user_id)}" if user_id is not None else f"--session {placed.session_id}"
    click.echo(f"held {_whose(placed.user_id, placed.session_id)}: {placed.reason}")
    click.echo(ctx.spelled(f"no rule and no forget removes it until `sessiondb policy release {named}`"))


@policy.command()
@_held_options
@json_option
@click.pass_obj
def release(ctx: CliContext, user_id: str | None, session_ref: str | None, as_json: JsonOutput | None) -> None:
    """Release a legal hold."""
    _one(user_id, session_ref)
    with ctx.open() as store:
        session_id = None
        if session_ref is not None:
            # A hold outlives a session deleted by hand: its id still releases it.
            held = {h.session_id for h in ctx.call(store.policy).holds}
            session_id = session_ref if session_ref in held else resolve(ctx, store, session_ref).id
        released = ctx.call(store.release_hold, user_id=user_id, session_id=session_id)
    whose = _whose(user_id, session_id)
    if as_json:
        as_json.emit({"user_id": user_id, "session_id": session_id, "released": released})
    elif released:
        click.echo(f"released the hold on {whose}")
    else:
        click.echo(f"no hold on {whose}: nothing changed")


@policy.command()
@click.option("--yes", is_flag=True, help="Remove what the rules take (without it: say what would go).")
@click.option("--force", is_flag=True, help="Apply even rules that would remove every conversation they cover.")
@json_option
@click.pass_obj
def apply(ctx: CliContext, yes: bool, force: bool, as_json: JsonOutput | None) -> None:
    """Apply the retention rules: without --yes, say what would go and change nothing.

    Each conversation goes in a transaction of its own, so it runs beside live writers and
    may be stopped at any point. Exits 1, removing nothing, when the rules would remove
    every conversation they cover (unless --force)."""
    with ctx.open() as store:
        report: PolicyReport = ctx.call(store.apply_policy, dry_run=not yes, force=force)
    if report.refused:
        raise CliError(report.summary(), "refused", report.to_dict())
    if as_json:
        as_json.emit(report.to_dict())
        return
    click.echo(report.summary())
    verb = "would go" if report.dry_run else "gone"
    for root, rule in report.removed:
        click.echo(f"  {verb}: {root} ({rule.replace('_', '-')})")
    for root, why in report.kept:
        click.echo(f"  kept: {root} ({why})")
    if report.dry_run and (report.removed or report.compacted_dropped):
        click.echo(ctx.spelled("pass --yes to remove them: `sessiondb policy apply --yes`"))


def _rule(rule: Policy) -> str:
    said = [f"{words} {spelled(value) if name != 'keep_last' else value}"
            for name, words in RULES if (value := getattr(rule, name)) is not None]
    return f"{_scope(rule.source)}: {', '.join(said)}"


def _scope(source: str | None) -> str:
    return "every other source" if source is None else f"source {source}"


def _whose(user_id: str | None, session_id: str | None) -> str:
    return f"user {user_id}" if user_id is not None else f"session {session_id}"

