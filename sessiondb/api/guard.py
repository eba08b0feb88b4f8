"""What a request must be before it reaches a route, and what every response carries.

The service runs on the user's own machine, where the attacker is a web page in the
user's browser: it can make the browser send requests to 127.0.0.1, and with DNS
rebinding it can even read the answers, as if the service were its own origin. So:

- `Host` must name where the service is bound (127.0.0.1, localhost, [::1] or the
  `--host` given, with the port): a rebound name is answered 421 and nothing else.
- A state-changing request (anything but GET, HEAD, OPTIONS) must be `application/json`,
  which a page can only send to another origin after a CORS preflight the service never
  grants, and an `Origin`, when the browser sends one, must be the service's own.
- A request body is capped (`max_body`, 413) before any of it is parsed: a declared
  `Content-Length` over the cap is refused unread, a chunked body once it passes it.
- Every response says not to be framed, sniffed or to leak the URL, and that the page
  loads nothing but its own files (the dashboard has no inline script or style).

Every refusal is the service's JSON error shape.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import error_body
from .responses import JSONResponse

DEFAULT_MAX_BODY = 16 * 1024 * 1024
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
]


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The `Host` values that name a service bound to `host`:`port` (lowercase)."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    names = {*LOOPBACK_NAMES, shown.lower()}
    hosts = {f"{name}:{port}" for name in names}
    if port == 80:  # a browser leaves the default port out
        hosts |= names
    return frozenset(hosts)


class Guard:
    """ASGI middleware enforcing the rules above, outermost so it sees every request."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str], max_body: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.hosts = hosts
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + SECURITY_HEADERS
            await send(message)

        refusal = self.refusal(scope, Headers(scope=scope))
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, self.capped(receive), send_with_headers)

    def refusal(self, scope: Scope, headers: Headers) -> JSONResponse | None:
        host = headers.get("host", "").lower()
        if host not in self.hosts:
            return _refuse(421, "misdirected_request",
                           f"this sessiondb service does not answer for host {host!r}; use the address it "
                           "serves on (http://127.0.0.1:PORT/)")
        if scope["method"] in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None and origin.lower() != f"{scope.get('scheme', 'http')}://{host}":
            return _refuse(403, "forbidden", f"refused a {scope['method']} from another origin ({origin!r}): "
                           "only the service's own dashboard may change data from a browser")
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            return _refuse(415, "unsupported_media_type",
                           f"a {scope['method']} must be sent as Content-Type: application/json, even without a body")
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            return _refuse(413, "too_large", self.too_large())
        return None

    def too_large(self) -> str:
        return f"the request body is over the service's limit of {self.max_body:,} bytes (sessiondb serve --max-body)"

    def capped(self, receive: Receive) -> Receive:
        """`receive`, refusing a body (chunked, or longer than it said) once it passes the cap."""
        seen = 0

        async def receive_capped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise HTTPException(413, self.too_large())
            return message

        return receive_capped


def _refuse(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(error_body(code, message, ""), status_code=status)
