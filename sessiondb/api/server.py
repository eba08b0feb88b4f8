"""How `sessiondb serve` runs the application: uvicorn, with limits on slow and many clients.

uvicorn closes a connection that is idle between requests (`timeout_keep_alive`) but
waits forever for the first request's headers, so sockets that connect and send nothing
(or a byte now and then) would pile up until the process runs out of descriptors.
`HeaderDeadline` gives every request `header_timeout` seconds, from the moment the
connection opens or the previous response ends, to deliver its complete headers; then the
connection is closed. `max_connections` is uvicorn's `limit_concurrency`: past it, new
requests are answered 503 at once instead of queueing.

A flood of idle sockets must not lock the owner out until the deadline frees them, so
connections waiting for headers (`Waiting`) may hold all the slots but a reserve: when one
more opens past that, the one that has waited longest is closed. A client that sends its
request as it connects (every real one) is served at once, whatever the flood.
"""

from __future__ import annotations

import asyncio
import functools
from collections import OrderedDict

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

RESERVED = 0.1  # the share of --max-connections kept for requests whose headers have arrived
#: The most bytes a request's line and headers may take: a recall's question of 20,000
#: characters (the API's bound) in a script of four UTF-8 bytes a character is 240,000
#: bytes in the URL, percent-encoded. The HTTP parser's own default, 16 KiB, reset the
#: connection of such a request instead of answering it.
MAX_REQUEST_HEAD = 512 * 1024


class Waiting:
    """The connections of one server waiting for a request's headers, oldest first, capped."""

    def __init__(self, cap: int) -> None:
        self.cap = max(1, cap)
        self.connections: OrderedDict[HeaderDeadline, None] = OrderedDict()

    def add(self, connection: HeaderDeadline) -> None:
        self.connections[connection] = None
        self.connections.move_to_end(connection)
        while len(self.connections) > self.cap:
            oldest, _ = self.connections.popitem(last=False)
            oldest.expire()

    def discard(self, connection: HeaderDeadline) -> None:
        self.connections.pop(connection, None)


class HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing connections whose headers arrive too slowly."""

    def __init__(self, *args, header_timeout: float, waiting: Waiting, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = header_timeout
        self.waiting = waiting
        self.deadline: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        self.disarm()
        self.deadline = self.loop.call_later(self.header_timeout, self.expire)
        self.waiting.add(self)

    def disarm(self) -> None:
        self.waiting.discard(self)
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None

    def expire(self) -> None:
        self.disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        cycle = self.cycle
        super().handle_events()
        if self.cycle is not cycle:  # a request's headers are complete: it is being served
            self.disarm()

    def on_response_complete(self) -> None:
        # Armed first: the next request on this connection gets its own deadline, and a
        # request already pipelined behind this one disarms it as it starts.
        self.arm()
        super().on_response_complete()


def config(app, *, host: str, port: int, header_timeout: float, max_connections: int) -> uvicorn.Config:
    waiting = Waiting(max_connections - max(1, int(max_connections * RESERVED)))
    return uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="on",
                          timeout_graceful_shutdown=5, limit_concurrency=max_connections,
                          h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
                          http=functools.partial(HeaderDeadline, header_timeout=header_timeout,  # type: ignore[arg-type]
                                                 waiting=waiting))
