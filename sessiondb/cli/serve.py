"""`sessiondb serve`: the HTTP API and the dashboard for every profile under the home, or
on the server `--store` (or $SESSIONDB_URL) names.

Loopback by default, and only for its owner (S-56): every API request must carry a token,
the one given ($SESSIONDB_TOKEN, `--token-file`, or `--token`, which other local users can
read in the process list) or else the owner's own in `<home>/serve-token`, made at random
on first start. The dashboard link printed at start carries it after `#`, never sent to the
server nor shown in `ps`.
"""

from __future__ import annotations

import errno
import socket
import sys
from pathlib import Path
from urllib.parse import quote

import click

from ..home import refuse_real_home_under_test, resolve_home
from ..errors import SessionDBError
from .context import CliContext


def _token(token: str | None, token_file: str | None, home: Path) -> str:
    from ..api.auth import TOKEN_FILENAME, owner_token, read_token_file

    if token_file is not None and token:
        raise click.UsageError("give the token once: --token-file, or --token / $SESSIONDB_TOKEN")
    try:
        if token_file is not None:
            return read_token_file(Path(token_file))
        if token:
            return token
        refuse_real_home_under_test(home / TOKEN_FILENAME)
        return owner_token(home)
    except SessionDBError as exc:
        raise click.ClickException(str(exc)) from None


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to bind (loopback by default); requests must name it (or a loopback name) as Host.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="The port to bind.")
@click.option("--token", envvar="SESSIONDB_TOKEN", default=None,
              help="The token every API request must carry as `Authorization: Bearer TOKEN` (default: "
                   "$SESSIONDB_TOKEN, else the owner's own in HOME/serve-token, made on first start). Prefer "
                   "$SESSIONDB_TOKEN or --token-file: other local users can read --token in the process list.")
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Read the token from this file (UTF-8, surrounding whitespace ignored; readable by you alone).")
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

    home = resolve_home(ctx.home)
    if not is_loopback(host) and not (token or token_file):
        raise click.ClickException(
            f"refusing to serve on {host} without a token of your choosing: anyone who can reach it could "
            "read and change your sessions; set SESSIONDB_TOKEN or pass --token-file (or bind 127.0.0.1)")
    url = ctx.server
    if ctx.store is not None and url is None:
        raise click.UsageError(f"serve serves the profiles of a home (--home) or of a server (--store URL); "
                               f"{ctx.store} is one store file")
    try:
        if url is None:
            refuse_real_home_under_test(home / "state.db")
    except SessionDBError as exc:
        raise click.ClickException(str(exc)) from None
    listening = _bound(host, port)  # a busy port is said first, before any link is printed
    port = listening.getsockname()[1]  # the one the system chose for --port 0
    token = _token(token, token_file, home)

    import uvicorn

    from ..api import create_app
    from ..api.server import config

    limits = {"max_body": max_body} if max_body else {}
    app = create_app(home, token=token, host=host, port=port, url=url, metrics=True, **limits)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"sessiondb: serving {app.state.stores.shown} to its token's holders only; open "
               f"http://{shown}:{port}/#token={quote(token, safe='')} (Ctrl-C stops)")
    sys.stdout.flush()
    server = uvicorn.Server(config(app, host=host, port=port, header_timeout=header_timeout,
                                   max_connections=max_connections))
    server.run(sockets=[listening])


def _bound(host: str, port: int) -> socket.socket:
    """A socket bound to the address (uvicorn listens on it), or the refusal saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a restart reuses the port
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        busy = exc.errno == errno.EADDRINUSE
        raise click.ClickException(
            f"cannot serve on {host}:{port}: " + ("another program is listening on that port; choose another "
                                                 "with --port" if busy else f"{exc.strerror or exc}")) from None
    return sock
