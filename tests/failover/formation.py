"""A pg_auto_failover formation for the failover tier: a monitor, a primary and a synchronous
secondary, on loopback ports, in a fresh directory under /var/tmp, run as user `postgres`.

Debian's `postgresql-15-auto-failover` and `pg-auto-failover-cli` provide the extension and
`pg_autoctl` (`.ci/install-failover`, which `make failover` runs). Each node is one
`pg_autoctl ... --run` process: the keeper, which supervises its postmaster and obeys the
monitor. The monitor's health checks are tightened (docs/fleet.md gives the figures) so a
dead primary is noticed in seconds rather than the default twenty.

`kill_primary()` SIGKILLs the primary node's keeper and postmaster, and every process of
them, at once, as the loss of its machine would: killing the postmaster alone is cured by
the keeper restarting it on the same node, a restart and not a failover. `revive(node)`
starts the dead node's keeper again; it rejoins as a secondary (pg_rewind if needed).
`start_formation()` raises pgserver.ServerUnavailable with the reason when there can be none.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgserver import ServerUnavailable, _alive, _children, find_bindir

READY_TIMEOUT = 180.0
#: The monitor's health checks: every 500 ms, a node unhealthy after 3 s without an answer
#: (defaults: 5 s and 20 s), so a failover starts within seconds of a kill.
MONITOR_SETTINGS = {
    "pgautofailover.health_check_period": "500",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "200",
    "pgautofailover.node_considered_unhealthy_timeout": "3000",
    "pgautofailover.startup_grace_period": "2000",
    # How long the monitor waits for an unreachable primary to have demoted itself before
    # promoting the secondary (default 30 s): kept above the keepers' network partition
    # timeout below, so a primary cut off from the formation stops first, and no two nodes
    # accept writes at once.
    "pgautofailover.primary_demote_timeout": "5000",
}
#: Seconds after which a primary's keeper that reaches neither the monitor nor its standby
#: demotes itself (default 20).
NETWORK_PARTITION_TIMEOUT = "3"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Node:
    name: str
    port: int
    pgdata: Path
    process: subprocess.Popen | None = None


@dataclass
class Formation:
    bindir: Path
    root: Path
    monitor: Node
    nodes: list[Node] = field(default_factory=list)

    # --- addresses --------------------------------------------------------------------

    def url(self, database: str = "postgres") -> str:
        """The multi-host URL an application uses: every node, the primary chosen by libpq."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)
        return f"postgresql://postgres@{hosts}/{database}?target_session_attrs=read-write&connect_timeout=2"

    def node_url(self, node: Node, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{node.port}/{database}?connect_timeout=2"

    def monitor_url(self) -> str:
        return f"postgresql://autoctl_node@127.0.0.1:{self.monitor.port}/pg_auto_failover?sslmode=disable"

    # --- running pg_autoctl -----------------------------------------------------------

    def _env(self) -> dict[str, str]:
        # pg_autoctl keeps its configuration and state under XDG directories: this formation's own.
        env = dict(os.environ, PG_CONFIG=str(self.bindir / "pg_config"), HOME=str(self.root))
        for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"):
            env[name] = str(self.root / name.lower())
        return env

    def _argv(self, argv: list[str]) -> list[str]:
        if os.geteuid() != 0:
            return argv
        env = [f"{k}={v}" for k, v in self._env().items() if k in ("PG_CONFIG", "HOME") or k.startswith("XDG_")]
        return ["runuser", "-u", "postgres", "--", "env", *env, *argv]

    def _spawn(self, node: Node, argv: list[str]) -> None:
        log = open(self.root / f"{node.name}.log", "ab")
        node.process = subprocess.Popen(self._argv(argv), stdout=log, stderr=log, env=self._env(),
                                        start_new_session=True, cwd=self.root)

    def _ctl(self, *argv: str) -> str:
        run = subprocess.run(self._argv(["pg_autoctl", *argv]), capture_output=True, text=True, env=self._env(),
                             cwd=self.root, timeout=READY_TIMEOUT)
        if run.returncode:
            raise ServerUnavailable(f"pg_autoctl {' '.join(argv)} failed: {run.stderr.strip()[-2000:]}")
        return run.stdout

    def start_monitor(self) -> None:
        self._spawn(self.monitor, [
            "pg_autoctl", "create", "monitor", "--pgdata", str(self.monitor.pgdata), "--pgport", str(self.monitor.port),
            "--pgctl", str(self.bindir / "pg_ctl"), "--hostname", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run"])
        self._wait(lambda: self._monitor_answers(), "the monitor to accept connections", self.monitor)
        with psycopg.connect(self.node_url(self.monitor, "pg_auto_failover"), autocommit=True) as conn:
            for name, value in MONITOR_SETTINGS.items():
                conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
            conn.execute("SELECT pg_reload_conf()")

    def add_node(self, name: str) -> Node:
        node = Node(name, free_port(), self.root / name)
        self.nodes.append(node)
        # Created, then configured, then run: the keeper reads its timeouts when it starts.
        self._ctl("create", "postgres", "--pgdata", str(node.pgdata), "--pgport", str(node.port),
                  "--pgctl", str(self.bindir / "pg_ctl"), "--hostname", "127.0.0.1", "--name", name,
                  "--auth", "trust", "--no-ssl", "--monitor", self.monitor_url())
        self._ctl("config", "set", "--pgdata", str(node.pgdata), "timeout.network_partition_timeout",
                  NETWORK_PARTITION_TIMEOUT)
        self.revive(node)
        return node

    def revive(self, node: Node) -> None:
        """Start a node's keeper (again, after a kill: the monitor makes it a secondary)."""
        self._spawn(node, ["pg_autoctl", "run", "--pgdata", str(node.pgdata)])

    # --- state ------------------------------------------------------------------------

    def _monitor_answers(self) -> bool:
        try:
            psycopg.connect(self.monitor_url(), connect_timeout=2).close()
            return True
        except psycopg.Error:
            return False

    def states(self) -> dict[str, tuple[str, str]]:
        """{node name: (reported state, goal state)} as the monitor sees them."""
        with psycopg.connect(self.monitor_url(), connect_timeout=5) as conn:
            return {name: (reported, goal) for name, reported, goal in conn.execute(
                "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node")}

    def primary(self, other_than: Node | None = None) -> Node | None:
        """The node the monitor holds as the writable primary, if one is (and is not `other_than`)."""
        for name, (reported, goal) in self.states().items():
            if reported == goal and reported in ("single", "primary", "wait_primary") and (
                    other_than is None or name != other_than.name):
                return self.node(name)
        return None

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    def healthy(self) -> bool:
        """A primary and a secondary, both settled: synchronous replication is on."""
        states = self.states()
        return len(states) == len(self.nodes) and sorted(r for r, g in states.values() if r == g) == [
            "primary", "secondary"]

    def wait_healthy(self, timeout: float = READY_TIMEOUT) -> None:
        self._wait(self.healthy, "a primary and a synchronous secondary", timeout=timeout)

    def wait_primary(self, other_than: Node | None = None, timeout: float = READY_TIMEOUT) -> Node:
        """The primary once there is one (other than `other_than`: the one just killed)."""
        self._wait(lambda: self.primary(other_than) is not None, "a primary", timeout=timeout)
        return self.primary(other_than)

    def _wait(self, ready, what: str, node: Node | None = None, timeout: float = READY_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if ready():
                    return
            except psycopg.Error:
                pass
            if node is not None and node.process is not None and node.process.poll() is not None:
                raise ServerUnavailable(f"pg_autoctl for {node.name} exited: {self.log_tail(node)}")
            time.sleep(0.1)
        raise ServerUnavailable(f"no {what} within {timeout:.0f} s: {self.states_or_reason()}")

    def states_or_reason(self) -> str:
        try:
            return repr(self.states())
        except psycopg.Error as exc:
            return f"the monitor does not answer ({exc})"

    def log_tail(self, node: Node) -> str:
        try:
            return (self.root / f"{node.name}.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    # --- faults -----------------------------------------------------------------------

    def kill(self, node: Node) -> None:
        """SIGKILL the node's keeper, its postmaster and every process of them at once."""
        doomed = _tree(node.process.pid)
        for victim in doomed:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.process.wait()
        deadline = time.monotonic() + 30  # the shared memory is free once every one is gone
        while any(_alive(victim) for victim in doomed) and time.monotonic() < deadline:
            time.sleep(0.02)

    def kill_primary(self) -> Node:
        """SIGKILL the current primary node (keeper and postmaster); returns it."""
        node = self.primary()
        if node is None:
            raise AssertionError(f"no primary to kill: {self.states_or_reason()}")
        self.kill(node)
        return node

    def destroy(self) -> None:
        for node in [*self.nodes, self.monitor]:
            if node.process is not None and node.process.poll() is None:
                self.kill(node)
        shutil.rmtree(self.root, ignore_errors=True)


def _tree(root: int) -> list[int]:
    """`root` and all its descendants."""
    found, frontier = [root], [root]
    while frontier:
        frontier = [child for parent in frontier for child in _children(parent)]
        found += frontier
    return found


def start_formation(nodes: int = 2) -> Formation:
    """A fresh monitor, primary and secondary, settled; ServerUnavailable says why when not."""
    bindir = find_bindir()
    if shutil.which("pg_autoctl") is None or not (bindir.parent / "lib" / "pgautofailover.so").exists():
        raise ServerUnavailable("no pg_auto_failover (run .ci/install-failover, as `make failover` does)")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise ServerUnavailable("running as root without `runuser` to start postgres as its own user")
    root = Path(tempfile.mkdtemp(prefix="sessiondb-failover-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    formation = Formation(bindir, root, Node("monitor", free_port(), root / "monitor"))
    try:
        formation.start_monitor()
        # The first node must be the primary before the second joins, or both race to be it.
        formation.add_node("node1")
        formation.wait_primary()
        for k in range(1, nodes):
            formation.add_node(f"node{k + 1}")
        formation.wait_healthy()
    except BaseException:
        formation.destroy()
        raise
    return formation
