"""A model API answered from a script on this machine, for the adapters' page examples.

`serving(answer)` runs a local HTTP server whose every POST is answered with
`answer(request)` as JSON, for as long as the `with` lasts, and gives its port: an
example's SDK client is pointed at it by environment variables, so nothing leaves the
machine and the example stays as a reader would type it.
"""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator


@contextlib.contextmanager
def serving(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Iterator[int]:
    class Scripted(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server spelling)
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            body = json.dumps(answer(request)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # keep the test's output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_port
    finally:
        server.shutdown()
        server.server_close()
