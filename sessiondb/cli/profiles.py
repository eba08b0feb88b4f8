"""`sessiondb profiles list | create | delete`: the faces of sessiondb.profiles.

Profiles come into being only here (and through an import or the demo, which write on
purpose): every other command refuses a profile that does not exist, so a typo in `-p`
never leaves an empty store behind.
"""

from __future__ import annotations

import click

from ..home import DEFAULT_PROFILE, profile_dir, resolve_home
from ..store.locations import shown_location
from .context import CliContext
from .output import JsonOutput, json_option


@click.group()
def profiles() -> None:
    """List, create and delete the profiles of the home (or of the server --store names)."""


@profiles.command("list")
@json_option
@click.pass_obj
def list_profiles(ctx: CliContext, as_json: JsonOutput | None) -> None:
    """`main` (the home's own store), then every named profile, with its store's path (on
    a server, with --store or $SESSIONDB_URL: the server's profiles)."""
    names = ctx.list_profiles()
    if ctx.server is not None:
        rows = [{"name": n, "server": shown_location(ctx.server)} for n in names]
    else:
        home = resolve_home(ctx.home)
        rows = [{"name": n, "path": str(profile_dir(home, n) / "state.db")} for n in names]
    if as_json:
        as_json.emit(rows)
        return
    for row in rows:
        click.echo(f"{row['name']:<20} {row.get('path', row.get('server'))}")


@profiles.command()
@click.argument("name")
@json_option
@click.pass_obj
def create(ctx: CliContext, name: str, as_json: JsonOutput | None) -> None:
    """Create profile NAME: its directory and an empty store (on a server: its schema)."""
    location = ctx.create_profile(name)
    if as_json:
        as_json.emit({"name": name, "path": location})
    else:
        click.echo(f"created profile {name}: {location}")


@profiles.command()
@click.argument("name")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@click.pass_obj
def delete(ctx: CliContext, name: str, yes: bool, as_json: JsonOutput | None) -> None:
    """Delete profile NAME with every session in it (asks first unless --yes).

    Refused while another process holds the profile's store (on a server: while another
    sessiondb connection uses its schema).
    """
    if name != DEFAULT_PROFILE:
        ctx.require_profile(name)
    if not yes:
        click.confirm(f"Delete profile {name} and every session in it? This cannot be undone", abort=True, err=True)
    gone = ctx.delete_profile(name)
    if as_json:
        as_json.emit({"deleted": name, "path": gone})
    else:
        click.echo(f"deleted profile {name} ({gone})")
