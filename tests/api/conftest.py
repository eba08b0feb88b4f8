"""A real `sessiondb serve` process on a free loopback port with a throw-away home."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

import httpx
import pytest

SERVE = [sys.executable, "-c", "from sessiondb.cli import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    url: str
    home: Path
    process: subprocess.Popen
    token: str

    @property
    def link(self) -> str:
        """The dashboard link `sessiondb serve` prints: the page takes the token from it."""
        return f"{self.url}/#token={quote(self.token, safe='')}"

    def client(self, token: str | None = None, **kwargs) -> httpx.Client:
        """A client that sends JSON, as the service asks of every state-changing request."""
        token = self.token if token is None else token
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        return httpx.Client(base_url=self.url, headers=headers, timeout=30, **kwargs)


def start(home: Path, *args: str, token: str | None = None, token_file: Path | None = None,
          env: dict | None = None, store: str | None = None) -> Server:
    """`sessiondb serve` for the home, or with `store` for the profiles on that server."""
    port = free_port()
    environ = {k: v for k, v in os.environ.items() if k != "SESSIONDB_TOKEN"}
    environ.update({"SESSIONDB_UNDER_TEST": "1", "SESSIONDB_HOME": str(home), **(env or {})})
    command = SERVE + (["--home", str(home)] if store is None else ["--store", store]) + [
        "serve", "--port", str(port), *args]
    if token:
        command += ["--token", token]
    if token_file:
        command += ["--token-file", str(token_file)]
    process = subprocess.Popen(command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The first line is the link to open, with the token after '#' (the owner's own when none was given).
    printed = re.search(r"http://\S+/#token=(\S+)", process.stdout.readline())
    if printed is None:
        process.wait(10)
        raise RuntimeError(f"sessiondb serve exited {process.returncode}: {process.stderr.read()}")
    token = unquote(printed.group(1))
    server = Server(f"http://127.0.0.1:{port}", home, process, token)
    headers = {"Authorization": b"Bearer " + token.encode("utf-8")} if token else {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sessiondb serve exited {process.returncode}: {process.stderr.read()}")
        try:
            if httpx.get(server.url + "/api/health", headers=headers, timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    stop(server)
    raise RuntimeError("sessiondb serve did not answer /api/health within 30 s")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def seed(home: Path) -> None:
    """The demo profile's sessions, written by the CLI before the server starts."""
    subprocess.run(SERVE + ["--home", str(home), "demo"], check=True, capture_output=True,
                   env={**os.environ, "SESSIONDB_UNDER_TEST": "1"})


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("api") / "home"
    seed(home)
    running = start(home)
    yield running
    stop(running)


@pytest.fixture
def api(server):
    with server.client() as client:
        yield client
