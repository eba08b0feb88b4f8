"""`sessiondb mcp`: the recall server for agents over stdio (sessiondb.mcp)."""

from __future__ import annotations

import click

from ..mcp import serve
from .context import CliContext


@click.command("mcp")
@click.option("--allow-append", is_flag=True, help="Also offer a tool that appends messages (read-only without it).")
@click.option("--allow-system", is_flag=True,
              help="With --allow-append, also take system messages (a resumed session replays them as instructions).")
@click.option("--allow-forget", is_flag=True,
              help="Also offer `forget`, which erases conversations for good (not offered without it).")
@click.option("--user", "user_id", metavar="ID",
              help="Serve this person's sessions alone: every tool reads and writes theirs only.")
@click.pass_obj
def mcp(ctx: CliContext, allow_append: bool, allow_system: bool, allow_forget: bool, user_id: str | None) -> None:
    """Serve the store to agents as a Model Context Protocol server on stdin/stdout.

    Tools: search, recall, transcript, list_sessions (append with --allow-append, forget with
    --allow-forget). Configure your agent to run `sessiondb mcp`.
    """
    if allow_system and not allow_append:
        raise click.UsageError("--allow-system only widens --allow-append: give both")
    with ctx.open() as store:
        try:
            ctx.call(serve, store, allow_append=allow_append, allow_system=allow_system, allow_forget=allow_forget,
                     user_id=user_id)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] != "mcp":
                raise
            raise click.ClickException("`sessiondb mcp` needs the MCP SDK: pip install 'sessiondb[mcp]'") from None
        except KeyboardInterrupt:
            pass  # Ctrl-C in a terminal: stop quietly
