"""`sessiondb mcp`: the recall server for agents over stdio (sessiondb.mcp)."""

from __future__ import annotations

import click

from ..mcp import serve
from .context import CliContext


@click.command("mcp")
@click.option("--allow-append", is_flag=True, help="Also offer a tool that appends messages (read-only without it).")
@click.option("--allow-system", is_flag=True,
              help="With --allow-append, also take system messages (a resumed session replays them as instructions).")
@click.pass_obj
def mcp(ctx: CliContext, allow_append: bool, allow_system: bool) -> None:
    """Serve the store to agents as a Model Context Protocol server on stdin/stdout.

    Tools: search, transcript, list_sessions (and append with --allow-append). Configure your agent to run `sessiondb mcp`.
    """
    if allow_system and not allow_append:
        raise click.UsageError("--allow-system only widens --allow-append: give both")
    with ctx.open() as store:
        try:
            serve(store, allow_append=allow_append, allow_system=allow_system)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] != "mcp":
                raise
            raise click.ClickException("`sessiondb mcp` needs the MCP SDK: pip install 'sessiondb[mcp]'") from None
        except KeyboardInterrupt:
            pass  # Ctrl-C in a terminal: stop quietly
