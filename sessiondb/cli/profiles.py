"""`sessiondb profiles list | create | delete`: the faces of sessiondb.profiles.

Profiles come into being only here (and through an import or the demo, which write on
purpose): every other command refuses a profile that does not exist, so a typo in `-p`
never leaves an empty store behind.
"""

from __future__ import annotations

import click

from .. import profiles as library
from ..home import DEFAULT_PROFILE, profile_dir, resolve_home
from . import render
from .context import CliContext
from .sessions import json_option


@click.group()
def profiles() -> None:
    """List, create and delete the profiles of the home."""


@profiles.command("list")
@json_option
@click.pass_obj
def list_profiles(ctx: CliContext, as_json: bool) -> None:
    """`main` (the home's own store), then every named profile, with its store's path."""
    home = resolve_home(ctx.home)
    with ctx.refusals():
        names = library.list_profiles(home)
    rows = [{"name": n, "path": str(profile_dir(home, n) / "state.db")} for n in names]
    if as_json:
        render.emit_json(rows)
        return
    for row in rows:
        click.echo(f"{row['name']:<20} {row['path']}")


@profiles.command()
@click.argument("name")
@json_option
@click.pass_obj
def create(ctx: CliContext, name: str, as_json: bool) -> None:
    """Create profile NAME: its directory and an empty store."""
    with ctx.refusals():
        path = library.create(name, ctx.home)
    if as_json:
        render.emit_json({"name": name, "path": str(path)})
    else:
        click.echo(f"created profile {name}: {path}")


@profiles.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def delete(ctx: CliContext, name: str, yes: bool, as_json: bool) -> None:
    """Delete profile NAME with every session in it (asks first unless --yes).

    Refused while another process holds the profile's store.
    """
    if name != DEFAULT_PROFILE:
        ctx.require_profile(name)
    if not yes:
        click.confirm(f"Delete profile {name} and every session in it? This cannot be undone", abort=True, err=True)
    with ctx.refusals():
        directory = library.delete(name, ctx.home)
    if as_json:
        render.emit_json({"deleted": name, "path": str(directory)})
    else:
        click.echo(f"deleted profile {name} ({directory})")
