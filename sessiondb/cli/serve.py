"""`sessiondb serve`: the HTTP API and the dashboard for every profile under the home.

Loopback by default. Binding any other address needs a token (`--token` or
$SESSIONDB_TOKEN), which every API request must then send as `Authorization: Bearer`.
"""

from __future__ import annotations

import sys

import click

from ..home import refuse_real_home_under_test, resolve_home
from ..errors import SessionDBError
from .context import CliContext


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="The address to bind (loopback by default).")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to bind.")
@click.option("--token", envvar="SESSIONDB_TOKEN", default=None,
              help="Require `Authorization: Bearer TOKEN` on every API request (default: $SESSIONDB_TOKEN); "
                   "required to bind a non-loopback address.")
@click.pass_obj
def serve(ctx: CliContext, host: str, port: int, token: str | None) -> None:
    """Serve the HTTP API and the dashboard for every profile under the home."""
    from ..api.auth import is_loopback

    token = token or None
    if not is_loopback(host) and not token:
        raise click.ClickException(
            f"refusing to serve on {host} without a token: anyone who can reach it could read and change "
            "your sessions; pass --token or set SESSIONDB_TOKEN (or bind 127.0.0.1)")
    home = resolve_home(ctx.home)
    try:
        refuse_real_home_under_test(home / "state.db")
    except SessionDBError as exc:
        raise click.ClickException(str(exc)) from None

    import uvicorn

    from ..api import create_app

    app = create_app(home, token=token)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"sessiondb: serving {home} on http://{shown}:{port}/ "
               f"({'token required' if token else 'no token'}; Ctrl-C stops)")
    sys.stdout.flush()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False,
                            lifespan="on", timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise click.ClickException(f"could not serve on {host}:{port}: is the port in use? "
                                   "choose another with --port") from None
