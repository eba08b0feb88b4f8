"""`sessiondb serve`: the HTTP API and the dashboard for every profile under the home, or
on the server `--store` (or $SESSIONDB_URL) names.

Loopback by default. Binding any other address needs a token ($SESSIONDB_TOKEN,
`--token-file`, or `--token`, which other local users can read in the process list), which
every API request must then send as `Authorization: Bearer`.
"""

from __future__ import annotations

import sys

import click

from ..home import refuse_real_home_under_test, resolve_home
from ..errors import SessionDBError
from .context import CliContext


def _token(token: str | None, token_file: str | None) -> str | None:
    if token_file is not None:
        if token:
            raise click.UsageError("give the token once: --token-file, or --token / $SESSIONDB_TOKEN")
        try:
            with open(token_file, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.ClickException(f"cannot read the token from {token_file}: {exc}") from None
        if not token:
            raise click.ClickException(f"{token_file} is empty; put the token in it")
    return token or None


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to bind (loopback by default); requests must name it (or a loopback name) as Host.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to bind.")
@click.option("--token", envvar="SESSIONDB_TOKEN", default=None,
              help="Require `Authorization: Bearer TOKEN` on every API request (default: $SESSIONDB_TOKEN); "
                   "required to bind a non-loopback address. Prefer $SESSIONDB_TOKEN or --token-file: other "
                   "local users can read --token in the process list.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Read the token from this file (UTF-8, surrounding whitespace ignored).")
@click.option("--max-body", type=click.IntRange(1), default=None, show_default="16 MiB",
              help="The largest request body accepted, in bytes; larger ones get 413.")
@click.option("--header-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Seconds a connection has to send a request's headers before it is closed.")
@click.option("--max-connections", type=click.IntRange(1), default=500, show_default=True,
              help="Connections served at once; requests past it get 503.")
@click.pass_obj
def serve(ctx: CliContext, host: str, port: int, token: str | None, token_file: str | None, max_body: int | None,
          header_timeout: float, max_connections: int) -> None:
    """Serve the HTTP API and the dashboard for every profile under the home (or on the
    server --store names)."""
    from ..api.auth import is_loopback

    token = _token(token, token_file)
    if not is_loopback(host) and not token:
        raise click.ClickException(
            f"refusing to serve on {host} without a token: anyone who can reach it could read and change "
            "your sessions; set SESSIONDB_TOKEN or pass --token-file (or bind 127.0.0.1)")
    home = resolve_home(ctx.home)
    url = ctx.server
    if ctx.store is not None and url is None:
        raise click.UsageError(f"serve serves the profiles of a home (--home) or of a server (--store URL); "
                               f"{ctx.store} is one store file")
    try:
        if url is None:
            refuse_real_home_under_test(home / "state.db")
    except SessionDBError as exc:
        raise click.ClickException(str(exc)) from None

    import uvicorn

    from ..api import create_app
    from ..api.server import config

    limits = {"max_body": max_body} if max_body else {}
    app = create_app(home, token=token, host=host, port=port, url=url, **limits)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"sessiondb: serving {app.state.stores.shown} on http://{shown}:{port}/ "
               f"({'token required' if token else 'no token'}; Ctrl-C stops)")
    sys.stdout.flush()
    server = uvicorn.Server(config(app, host=host, port=port, header_timeout=header_timeout,
                                   max_connections=max_connections))
    try:
        server.run()
    except SystemExit:  # uvicorn exits when it cannot bind; it has logged why
        raise click.ClickException(f"could not serve on {host}:{port}: is the port in use? "
                                   "choose another with --port") from None
