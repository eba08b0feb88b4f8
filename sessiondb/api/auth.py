"""The bearer token: when the service has one, every API request must carry it.

`Authorization: Bearer TOKEN`, compared in constant time; a missing or wrong token gets
401 with the error JSON. The dashboard's static files (`/` and `/static/...`) hold no
data and are served without it, because a browser cannot put a header on a page it
navigates to; the page asks for the token and sends it with every API call.
"""

from __future__ import annotations

import hmac
import ipaddress

from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.responses import JSONResponse

from .errors import error_body

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
