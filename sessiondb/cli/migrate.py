"""`sessiondb migrate --from A [--from B ...] --to C`: move stores, each into its own.

Each side is a store location (a file path, a `postgresql://` URL) or the name of a
profile of the chosen home. A server holds many profiles, so each store moved to one
lands in the profile of the same name there (`main` for a store given by path or by the
server's own URL), or in the one `--to-profile` names: stores are never merged by
moving them. A file, or a home's profile, is one store: it takes one source.

The sessions are streamed: an export of the source read one session at a time (in one
snapshot each) feeds an import into the target, which stores each session in one
transaction and only what it lacks (by uid). So memory stays constant, an interrupted
migration leaves whole sessions behind it, and running it again completes it without
storing anything twice. The sources are never written.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from .. import home as homes
from .. import open_store, profiles
from ..errors import InvalidInput
from ..store.contract import Store
from ..store.locations import holds_profiles, shown_location
from .context import CliContext, require_store_file
from .output import JsonOutput, json_option


@dataclass(frozen=True)
class _Move:
    """One store to move: where it is read and where it goes (a target profile, None for
    a target that is one store)."""

    source: str
    source_profile: str | None  # a profile of the source's server, or None
    target_profile: str | None


def _is_location(where: str) -> bool:
    return "://" in where or "/" in where or where.endswith(".db")


def _moves(ctx: CliContext, sources: tuple[str, ...], source_profile: str | None, target: str,
           target_profile: str | None) -> list[_Move]:
    """What goes where, decided (and refused) before anything is opened or written."""
    with ctx.refusals():
        if source_profile is not None:
            homes.validate_profile(source_profile)
            if len(sources) != 1 or not (_is_location(sources[0]) and holds_profiles(sources[0])):
                raise InvalidInput("--from-profile names a profile of the server one --from URL names")
        if target_profile is not None:
            homes.validate_profile(target_profile)
        to_server = _is_location(target) and holds_profiles(target)
        if target_profile is not None and not to_server:
            raise InvalidInput(f"--to {target} is one store; --to-profile names a profile of a server (--to URL)")
        moves = []
        for where in sources:
            named = source_profile if _is_location(where) else homes.validate_profile(where)
            goes_to = (target_profile or named or homes.DEFAULT_PROFILE) if to_server else None
            moves.append(_Move(where, source_profile if _is_location(where) else None, goes_to))
        if len({m.target_profile for m in moves}) < len(moves):
            if to_server:
                raise InvalidInput(
                    f"{len(moves)} stores would be merged into one profile of {shown_location(target)}; migrate "
                    "them one at a time, each with its own --to-profile")
            raise InvalidInput(f"{len(moves)} stores would be merged into one store, {target}; migrate them "
                               "one at a time, each into a store of its own")
    return moves


def _open_source(ctx: CliContext, move: _Move) -> Store:
    with ctx.refusals():
        if _is_location(move.source):
            if move.source_profile is not None:
                profiles.require(move.source_profile, url=move.source)
            require_store_file(move.source, "a store to copy from is read, never made")  # a typo creates nothing
            return open_store(move.source, profile=move.source_profile)
        profiles.require(move.source, ctx.home, given_home=ctx.home is not None)  # a typo creates nothing
        return open_store(home=ctx.home, profile=move.source)


def _open_target(ctx: CliContext, target: str, move: _Move) -> Store:
    with ctx.refusals():
        if _is_location(target):
            return open_store(target, profile=move.target_profile)
        return open_store(home=ctx.home, profile=homes.validate_profile(target))


def _counted(records: Iterable[dict[str, Any]], progress: Progress | None, task: Any,
             counts: dict[str, int]) -> Iterator[dict[str, Any]]:
    for record in records:
        if record.get("type") == "message":
            counts["messages"] += 1
        yield record
        if record.get("type") == "end":
            counts["sessions"] += 1
            if progress is not None:
                progress.advance(task)


def _move(ctx: CliContext, move: _Move, target_at: str, show: bool, filled: set[str]) -> dict[str, Any]:
    """Move one store, unless its target is one an earlier move of this run filled (a URL
    naming its schema is one store); its report."""
    with _open_source(ctx, move) as source, _open_target(ctx, target_at, move) as target:
        if source.location == target.location:
            raise click.ClickException(str(InvalidInput(
                f"--from {move.source} and --to name the same store; nothing to do")))
        if target.location in filled:
            raise click.ClickException(str(InvalidInput(
                f"--from {move.source} would be merged into {target.location}, which this run already filled; "
                "migrate it on its own, with its own --to-profile")))
        filled.add(target.location)
        total = ctx.call(source.stats).sessions
        counts = {"sessions": 0, "messages": 0}
        bar = Progress(TextColumn(f"migrating {move.source}"), BarColumn(), MofNCompleteColumn(),
                       TimeRemainingColumn(), transient=True, disable=not show, console=Console(stderr=True))
        with bar:
            task = bar.add_task("sessions", total=total)
            stream = ctx.call(source.export)
            try:
                report = ctx.call(target.import_records, _counted(stream, bar, task, counts))
            finally:
                stream.close()
    return {"from": source.location, "to": target.location, "profile": move.target_profile,
            "sessions_read": counts["sessions"], "messages_read": counts["messages"], **report.to_dict()}


@click.command("migrate")
@click.option("--from", "sources", required=True, multiple=True, metavar="PATH_OR_PROFILE",
              help="A store to copy from: a path, a URL or a profile name of the home; repeat it to move "
                   "several, each into its own profile.")
@click.option("--from-profile", "source_profile", metavar="NAME",
              help="With --from URL: the profile of that server to copy from (default: main).")
@click.option("--to", "target_at", required=True, metavar="URL_OR_PATH",
              help="Where to copy into: a server's URL (each store into the profile of its own name there), "
                   "a path or a profile name (created if new).")
@click.option("--to-profile", "target_profile", metavar="NAME",
              help="With --to URL: the server's profile to copy into (default: the source's own name).")
@click.option("--progress/--no-progress", default=None,
              help="Show a progress bar (default: when stderr is a terminal and not --json).")
@json_option
@click.pass_obj
def migrate(ctx: CliContext, sources: tuple[str, ...], source_profile: str | None, target_at: str,
            target_profile: str | None, progress: bool | None, as_json: JsonOutput | None) -> None:
    """Copy every session, message and usage row of stores into others, resumably.

    Run it again after an interruption: what the targets already hold is skipped.
    """
    started = time.monotonic()
    moves = _moves(ctx, sources, source_profile, target_at, target_profile)
    show = progress if progress is not None else (sys.stderr.isatty() and not as_json)
    done: list[dict[str, Any]] = []
    filled: set[str] = set()
    for move in moves:
        done.append(_move(ctx, move, target_at, show, filled))
        if not as_json:
            _print(done[-1])
    seconds = round(time.monotonic() - started, 3)
    if as_json:
        as_json.emit({"stores": done, "seconds": seconds})
    elif len(done) > 1:
        click.echo(f"migrated {len(done)} stores in {seconds:.1f} s")


def _print(moved: dict[str, Any]) -> None:
    into = moved["to"] if moved["profile"] is None else f"{moved['to']} (profile {moved['profile']})"
    click.echo(
        f"migrated {moved['sessions_read']} session(s) from {moved['from']} to {into}: "
        f"{moved['sessions_created']} new, {moved['sessions_merged']} already there; "
        f"{moved['messages_imported']} message(s) copied, {moved['messages_skipped']} already there; "
        f"{moved['usage_rows_imported']} usage row(s)")
    if moved["detached"]:
        click.echo(f"{len(moved['detached'])} session(s) lost their parent link: " + ", ".join(moved["detached"]),
                   err=True)
