"""A real pgbouncer in front of the suite's PostgreSQL server (tests/pgserver.py).

Debian's `pgbouncer` package provides the binary (.ci/run and `make test-pooler` install
it). It refuses to run as root, so as root it runs as the `postgres` user, as the server
does. It listens only on a unix socket in the server's own directory, under a port number
of its own (only the socket file's name), and sends every database to the server's socket
with trust authentication: nothing outside the machine can reach it.

`pool_size` server connections serve every client of a database: fewer than the clients
open, so consecutive transactions of one client land on different server connections and
one server connection serves the transactions of many clients, as in a fleet. What a
client leaves on a server connection between transactions (a SET, a prepared statement)
then shows up under another client's transactions.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pgserver import PORT, Server, ServerUnavailable

READY_TIMEOUT = 30.0


@dataclass
class Pooler:
    server: Server
    port: int
    mode: str
    process: subprocess.Popen

    @property
    def socket(self) -> Path:
        return self.server.socket_dir / f".s.PGSQL.{self.port}"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.server.socket_dir}&port={self.port}"

    def log_tail(self) -> str:
        try:
            return (self.server.root / f"pgbouncer-{self.port}.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()  # runuser passes it on; pgbouncer exits at once on SIGTERM
            self.process.wait(timeout=30)


def start_pooler(server: Server, *, mode: str = "transaction", port: int = 6432, pool_size: int = 3) -> Pooler:
    """pgbouncer in `mode` in front of `server`, accepting connections; ServerUnavailable
    says why when it cannot start."""
    binary = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if Path("/usr/sbin/pgbouncer").exists() else None)
    if binary is None:
        raise ServerUnavailable("no pgbouncer (install Debian's `pgbouncer` package; .ci/run does)")
    root = server.root
    users = root / "pgbouncer-users.txt"
    users.write_text('"postgres" ""\n')
    ini = root / f"pgbouncer-{port}.ini"
    ini.write_text("\n".join([
        "[databases]",
        f"* = host={server.socket_dir} port={PORT}",
        "[pgbouncer]",
        "listen_addr =",
        f"listen_port = {port}",
        f"unix_socket_dir = {server.socket_dir}",
        "auth_type = trust",
        f"auth_file = {users}",
        f"pool_mode = {mode}",
        f"default_pool_size = {pool_size}",
        "max_client_conn = 1000",
        f"logfile = {root / f'pgbouncer-{port}.log'}",
        f"pidfile = {root / f'pgbouncer-{port}.pid'}",
        "",
    ]))
    process = subprocess.Popen(server._as_owner([binary, "-q", str(ini)]), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    pooler = Pooler(server, port, mode, process)
    deadline = time.monotonic() + READY_TIMEOUT
    while not pooler.socket.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            pooler.stop()
            error = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise ServerUnavailable(f"pgbouncer did not start: {error.strip() or pooler.log_tail()}")
        time.sleep(0.05)
    return pooler

