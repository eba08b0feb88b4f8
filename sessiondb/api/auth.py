"""The bearer token: every API request must carry it.

`Authorization: Bearer TOKEN`, compared in constant time; a missing or wrong token gets
401 with the error JSON. The dashboard's static files (`/` and `/static/...`) hold no
data and are served without it, because a browser cannot put a header on a page it
navigates to; the page takes the token from the link `sessiondb serve` prints (after `#`,
which a browser never sends to the server) or asks for it, and sends it with every API call.

The service always has a token (S-56): a loopback port is open to every account on the
machine, so without one any local user could read and change the owner's sessions. Unless
one is given, it is the owner's: made once, at random, in `<home>/serve-token` (0600 in the
0700 home), and read from there at every start. A token file given with `--token-file`
must be readable by its owner alone, for the same reason.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
import stat
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import InvalidInput
from ..files import DestinationExists, private_file
from ..home import ensure_private_dir
from .errors import error_body
from .responses import JSONResponse

TOKEN_FILENAME = "serve-token"


def read_token_file(path: Path) -> str:
    """The token in `path` (UTF-8, surrounding whitespace ignored), refused when the file is
    a link, is another account's, or can be read by anyone but its owner."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidInput(f"cannot read the token from {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise InvalidInput(f"{path} is not a regular file of this account's; keep the token in a file of your own")
        if st.st_mode & 0o077:
            raise InvalidInput(f"{path} can be read by other accounts (mode {stat.S_IMODE(st.st_mode):o}), who could "
                               f"then use the service as you: run `chmod 600 {path}` and start again")
        try:
            token = f.read().decode("utf-8").strip()
        except UnicodeDecodeError:
            raise InvalidInput(f"{path} is not UTF-8 text; put the token in it as text") from None
    if not token:
        raise InvalidInput(f"{path} is empty; put the token in it")
    return token


def owner_token(home: Path) -> str:
    """The owner's token in `<home>/serve-token`, made at random the first time."""
    path = Path(home) / TOKEN_FILENAME
    if not os.path.lexists(path):
        ensure_private_dir(path.parent)
        try:
            with private_file(path, replace=False) as out:  # never over a file another start made
                out.write(secrets.token_urlsafe(32) + "\n")
        except DestinationExists:
            pass  # another `serve` made it first: use that one
    return read_token_file(path)

PUBLIC_PATHS = frozenset({"/", "/favicon.ico"})
PUBLIC_PREFIXES = ("/static/",)


def is_loopback(host: str) -> bool:
    """Whether binding `host` serves this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_matches(header: bytes | None, token: str) -> bool:
    """Whether the raw header is `Bearer TOKEN`; a header's bytes are compared with the
    token's UTF-8, so a non-ASCII token works from any client that sends it as UTF-8."""
    if not header:
        return False
    scheme, _, given = header.partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(given.strip(), token.encode("utf-8"))


class TokenAuth:
    """ASGI middleware: refuse every non-public request without the right bearer token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope.get("path", "")
            public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
            if not public:
                header = None
                for name, value in scope.get("headers", ()):
                    if name == b"authorization":
                        header = value
                        break
                if not token_matches(header, self.token):
                    response = JSONResponse(
                        error_body("unauthorized", "this sessiondb service needs its token: send "
                                   "`Authorization: Bearer TOKEN`", ""),
                        status_code=401, headers={"WWW-Authenticate": "Bearer"})
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)
