"""A real PostgreSQL server for the suite, started from the machine's own binaries.

Debian's `postgresql-15` package provides `initdb`, `postgres` and `pg_ctl`; they refuse
to run as root, so as root they run as the `postgres` user (`runuser`). The cluster lives
in a fresh directory under /var/tmp (this machine's /tmp is private to root) and listens
only on a unix socket in that directory: nothing outside the machine can reach it, and
two suites never collide on a port. `synchronous_commit=on` and `fsync=on`: what the
tests acknowledge is what a production server would keep.

`start_server()` raises ServerUnavailable with the reason when no server can be started;
the fixtures turn that into a failure under CI (CI=true) and a skip elsewhere.
"""

from __future__ import annotations

import glob
import importlib.metadata
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PORT = 5432  # only the socket file's name: the server listens on no TCP port
READY_TIMEOUT = 60.0


class ServerUnavailable(RuntimeError):
    """No PostgreSQL server could be started here; the message says why."""


def find_bindir() -> Path:
    """The newest installed PostgreSQL's bin directory ($SESSIONDB_PG_BINDIR wins)."""
    given = os.environ.get("SESSIONDB_PG_BINDIR")
    candidates = [given] if given else sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise ServerUnavailable("no PostgreSQL binaries (install Debian's `postgresql` package; .ci/run does)")


def vector_bindir() -> Path:
    """The binaries of the `pgserver` wheel: PostgreSQL 16 with pgvector, which Debian's
    PostgreSQL 15 lacks (the test extra installs it), for the tests of pgvector's scan.

    They run from a copy under /var/tmp, as the clusters live there: the `postgres` user may
    not be allowed into the checkout that holds the venv. The copy is made once per version
    of the wheel (whole, then renamed into place, so two workers never see half of one)."""
    try:
        wheel = importlib.metadata.distribution("pgserver")
    except importlib.metadata.PackageNotFoundError:
        raise ServerUnavailable("no PostgreSQL with pgvector: the `pgserver` wheel is not installed") from None
    # The binaries find their libraries at ../../../pgserver.libs: both folders are copied.
    packages = Path(wheel.locate_file("pgserver")).parent
    if not (packages / "pgserver" / "pginstall" / "bin" / "initdb").exists():
        raise ServerUnavailable(f"the `pgserver` wheel has no initdb under {packages}")
    copy = Path("/var/tmp") / f"sessiondb-pgvector-{wheel.version}"
    if not (copy / "pgserver" / "pginstall" / "bin" / "initdb").exists():
        staging = Path(tempfile.mkdtemp(prefix="sessiondb-pgvector-", dir="/var/tmp"))
        for folder in ("pgserver", "pgserver.libs"):
            shutil.copytree(packages / folder, staging / "copy" / folder)
        os.chmod(staging / "copy", 0o755)
        try:
            os.rename(staging / "copy", copy)
        except OSError:  # another worker's copy came first
            pass
        shutil.rmtree(staging, ignore_errors=True)
    return copy / "pgserver" / "pginstall" / "bin"


def _version(path: str) -> int:
    try:
        return int(Path(path).parent.name)
    except ValueError:
        return 0


@dataclass
class Server:
    bindir: Path
    root: Path  # holds data/ and the socket
    process: subprocess.Popen | None = None

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        return self.root

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={PORT}"

    def _as_owner(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv

    def init(self) -> None:
        self.data.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self.data, "postgres", "postgres")
        run = subprocess.run(
            self._as_owner([str(self.bindir / "initdb"), "-D", str(self.data), "-U", "postgres",
                            "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"]),
            capture_output=True, text=True)
        if run.returncode:
            raise ServerUnavailable(f"initdb failed: {run.stderr.strip() or run.stdout.strip()}")

    def start(self) -> None:
        """Start the postmaster (again, after a stop or kill) and wait until it accepts."""
        settings = {
            "listen_addresses": "", "unix_socket_directories": str(self.socket_dir), "port": str(PORT),
            "fsync": "on", "synchronous_commit": "on", "max_connections": "200",
            "shared_buffers": "128MB", "log_min_messages": "fatal", "logging_collector": "off",
        }
        argv = [str(self.bindir / "postgres"), "-D", str(self.data)]
        for name, value in settings.items():
            argv += ["-c", f"{name}={value}"]
        log = open(self.root / "server.log", "ab")
        self.process = subprocess.Popen(self._as_owner(argv), stdout=log, stderr=log, start_new_session=True)
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            probe = subprocess.run([str(self.bindir / "pg_isready"), "-h", str(self.socket_dir), "-p", str(PORT)],
                                   capture_output=True)
            if probe.returncode == 0:
                return
            if self.process is not None and self.process.poll() is not None:
                raise ServerUnavailable(f"postgres exited: {self.log_tail()}")
            time.sleep(0.1)
        raise ServerUnavailable(f"postgres did not accept connections in {READY_TIMEOUT:.0f} s: {self.log_tail()}")

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """SIGKILL the postmaster and every process of it at once, as a crash of the machine's
        server would; the next start runs crash recovery from the WAL."""
        pid = self.postmaster_pid()
        doomed = [pid, *_children(pid)]
        for victim in doomed:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process is not None:
            self.process.wait()
        deadline = time.monotonic() + 30  # the shared memory is free once every one is gone
        while any(_alive(victim) for victim in doomed) and time.monotonic() < deadline:
            time.sleep(0.02)

    def stop(self, mode: str = "fast") -> None:
        if self.process is None or self.process.poll() is not None:
            return
        subprocess.run(self._as_owner([str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"]),
                       capture_output=True)
        self.process.wait(timeout=60)

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self) -> str:
        try:
            return (self.root / "server.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def destroy(self) -> None:
        try:
            self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def _children(parent: int) -> list[int]:
    found = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == parent:
            found.append(int(Path(stat).parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start_replica(primary: Server) -> Server:
    """A streaming replica of `primary` (a base backup with -R: a standby that follows its
    WAL over the primary's socket), in its own directory and socket, started; hot standby."""
    root = Path(tempfile.mkdtemp(prefix="sessiondb-pg-replica-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    replica = Server(primary.bindir, root)
    try:
        replica.data.mkdir(mode=0o700)
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(replica.data, "postgres", "postgres")
        run = subprocess.run(replica._as_owner([
            str(primary.bindir / "pg_basebackup"), "-D", str(replica.data), "-R", "-X", "stream",
            "-h", str(primary.socket_dir), "-p", str(PORT), "-U", "postgres"]), capture_output=True, text=True)
        if run.returncode:
            raise ServerUnavailable(f"pg_basebackup failed: {run.stderr.strip() or run.stdout.strip()}")
        replica.start()
    except BaseException:
        replica.destroy()
        raise
    return replica


def start_server(bindir: Path | None = None) -> Server:
    """A fresh cluster of `bindir`'s PostgreSQL (the newest installed), started;
    ServerUnavailable says why when there can be none."""
    bindir = bindir or find_bindir()
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise ServerUnavailable("running as root without `runuser` to start postgres as its own user")
    root = Path(tempfile.mkdtemp(prefix="sessiondb-pg-", dir="/var/tmp"))
    os.chmod(root, 0o755)
    server = Server(bindir, root)
    try:
        server.init()
        server.start()
    except BaseException:
        server.destroy()
        raise
    return server
