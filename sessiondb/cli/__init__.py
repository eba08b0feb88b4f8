"""The `sessiondb` command: one small module per command group, each a thin face over the library."""

from __future__ import annotations

import click

from .context import CliContext
from .demo import demo
from .doctor import doctor, recover
from .gateway import gateway
from .migrate import migrate
from .serve import serve
from .sessions import sessions
from . import maintenance, transfer as _transfer  # noqa: F401 - transfer adds export and import to `sessions`


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", type=click.Path(file_okay=False), envvar="SESSIONDB_HOME",
              help="The sessiondb home (default: $SESSIONDB_HOME or ~/.sessiondb).")
@click.option("-p", "--profile", default=None, help="The profile whose store to use (default: main).")
@click.pass_context
def main(ctx: click.Context, home: str | None, profile: str | None) -> None:
    """sessiondb: the durable memory of AI agents."""
    ctx.obj = CliContext(home=home, profile=profile)


main.add_command(demo)
main.add_command(doctor)
main.add_command(recover)
main.add_command(gateway)
main.add_command(maintenance.backup)
main.add_command(migrate)
main.add_command(serve)
main.add_command(sessions)
for _command in (maintenance.optimize, maintenance.vacuum, maintenance.prune):
    sessions.add_command(_command)
