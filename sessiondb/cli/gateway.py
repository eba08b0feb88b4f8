"""`sessiondb gateway ...`: the gateway's status, and the fleet simulator that demos it.

`status` reads the routing index in the home's own store and the gateway's spool;
`simulate` drives a Gateway like a busy messaging fleet (sessiondb.gateway.simulate) in a
fresh directory unless told where, and prints what it wrote and what recovery found.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import asdict
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import SessionDBError
from ..gateway import Gateway
from ..gateway import simulate as sim
from ..home import resolve_home
from .context import CliContext
from .output import JsonOutput, json_option



@click.group()
def gateway() -> None:
    """Inspect the gateway's routing and queues, or simulate a messaging fleet."""


@gateway.command()
@click.option("--routes", "show_routes", is_flag=True, help="List every routing entry, not only the counts.")
@json_option
@click.pass_obj
def status(ctx: CliContext, show_routes: bool, as_json: JsonOutput | None) -> None:
    """Routing entries by turn state, and messages waiting in the spool, per profile."""
    if ctx.store is not None:
        raise click.UsageError("the gateway runs on the profiles of a home (--home), not on --store or $SESSIONDB_URL")
    try:
        with Gateway(ctx.home, retry_interval=3600) as gw:
            report = gw.status()
    except SessionDBError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        as_json.emit(report)
        return
    console = Console()
    table = Table(title=f"sessiondb gateway: {report['home']}")
    columns = ("routes", "idle", "running", "resume_pending", "ended", "spool_files", "spooled")
    table.add_column("profile")
    for column in columns:
        table.add_column(column, justify="right")
    for profile, row in sorted(report["profiles"].items()):
        table.add_row(profile, *(str(row[c]) for c in columns))
    console.print(table)
    if show_routes:
        routes = Table(title="routes")
        for column in ("key", "session", "profile", "state"):
            routes.add_column(column)
        for r in report["routes"]:
            routes.add_row(r["key"], r["session_id"], r["profile"], r["state"])
        console.print(routes)


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[record.levelname.lower()] = self.counts.get(record.levelname.lower(), 0) + 1


@gateway.command()
@click.option("--profiles", default=3, show_default=True, type=click.IntRange(1, 50),
              help="Profiles served: main plus fleet-1, fleet-2...; the last one's home appears late.")
@click.option("--chats", default=50, show_default=True, type=click.IntRange(1, 100_000),
              help="Conversations (DMs sharing peer ids across profiles, groups, threads).")
@click.option("--messages", default=5000, show_default=True, type=click.IntRange(1, 10_000_000),
              help="Messages to write in total.")
@click.option("--kill-after", type=click.FloatRange(0, min_open=True), default=None,
              help="Run the traffic in a child process and SIGKILL it after SECONDS, then recover.")
@click.option("--into", "into", type=click.Path(file_okay=False), default=None,
              help="The home to write into (default: a new temporary directory, never your own home).")
@click.option("--seed", default=7, show_default=True, help="Random seed of the traffic.")
@click.option("--durability", type=click.Choice(["full", "normal"]), default="full", show_default=True,
              help="The stores' durability.")
@json_option
def simulate(profiles: int, chats: int, messages: int, kill_after: float | None, into: str | None, seed: int,
             durability: str, as_json: JsonOutput | None) -> None:
    """Drive a gateway like a busy messaging fleet and check every message is in its owner's store."""
    home = Path(into) if into else Path(tempfile.mkdtemp(prefix="sessiondb-fleet-"))
    plan = sim.Plan(home=str(resolve_home(home)), profiles=profiles, chats=chats, messages=messages, seed=seed,
                    durability=durability)
    counter = _Counter()
    logger = logging.getLogger("sessiondb.gateway")
    logger.addHandler(counter)
    logger.propagate = False
    try:
        if kill_after is None:
            figures = asdict(sim.run(plan))
            recovery = None
            with Gateway(plan.home, durability=durability) as gw:
                recovery = gw.recover().to_dict()
        else:
            last, recovery, finished = sim.run_killed(plan, kill_after)
            figures = finished or last
            figures["killed"] = finished is None
        checked, state = sim.account(plan.home, plan, figures)
    finally:
        logger.removeHandler(counter)
        logger.propagate = True
    result = {"home": plan.home, "plan": asdict(plan), "wrote": figures, "recovery": recovery,
              "verified": checked, "status": state["profiles"], "log": counter.counts}
    if as_json:
        as_json.emit(result)
        return
    _render(result)
    if checked["misplaced"] or checked["duplicates"] or checked["lost"]:
        raise SystemExit(1)


def _render(r: dict) -> None:
    console = Console()
    w, v = r["wrote"], r["verified"]
    console.print(f"[bold]fleet[/bold] {r['plan']['profiles']} profiles, {r['plan']['chats']} chats, "
                  f"home {r['home']}")
    if w:
        killed = " [red](killed with SIGKILL)[/red]" if w.get("killed") else ""
        console.print(f"wrote{killed}: {w.get('acknowledged', 0)} stored at once, {w.get('deferred', 0)} deferred "
                      f"first, {w.get('turns', 0)} turns, {w.get('internal', 0)} internal notifications, "
                      f"{w.get('compactions', 0)} compactions, {w.get('restarts', 0)} restarts "
                      f"in {w.get('seconds', 0):.1f}s")
        locked = (f"fleet-1's store was locked by another process for {w['busy_seconds']:.1f}s; "
                  if w.get("busy_seconds") else "")
        console.print(f"{locked}{w.get('spool_files', 0)} spool files written (late or locked profiles)")
    rec = r["recovery"] or {}
    console.print(f"recovery: {len(rec.get('resumed', []))} turns resume_pending, "
                  f"{len(rec.get('ended_stale', []))} stale ended, {len(rec.get('reset', []))} reset, "
                  f"{rec.get('spool_files', 0)} spool files, {rec.get('replayed', 0)} messages replayed, "
                  f"{rec.get('still_waiting', 0)} keys still waiting")
    table = Table(title="stored, per owner")
    for column in ("profile", "messages", "routes", "resume_pending", "waiting"):
        table.add_column(column, justify="right" if column != "profile" else "left")
    for profile in sorted(set(v["stored"]) | set(r["status"])):
        s = r["status"].get(profile, {})
        table.add_row(profile, str(v["stored"].get(profile, 0)), str(s.get("routes", 0)),
                      str(s.get("resume_pending", 0)), str(s.get("spooled", 0)))
    console.print(table)
    bad = v["misplaced"] or v["duplicates"] or v["lost"]
    verdict = "[red]FAILED[/red]" if bad else "[green]ok[/green]"
    console.print(f"verified {verdict}: {v['total']} messages stored, {v['lost']} lost, {v['misplaced']} in a "
                  f"store not their owner's, {v['duplicates']} duplicates; log: {r['log'] or 'quiet'}")
