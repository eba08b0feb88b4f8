"""Where the agent's tools run, and so whether host checkpoints are true (S-53).

Checkpoints read and write this machine's files. When the tools run in a container or a
remote sandbox, the paths they touch are not the host's paths, so a host snapshot would
capture the wrong files and a rollback would rewrite files the agent never touched. The
`ssh` backend is the same case: its tools act on the remote machine's filesystem, and a
path such as `/srv/app/main.py` there names a file here only by coincidence, so it is
refused too (snapshotting the remote tree over ssh is not something sessiondb does). The
classification is made from the backend configured now, at every call: a session that
started local and was moved to docker or ssh is refused from that moment on.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCAL = "local"
_NOT_HOST_PATHS = "so host paths are not the agent's paths"
#: Backends known to run the tools away from this machine's filesystem, and where they run.
ELSEWHERE = {
    "docker": f"in a docker container, {_NOT_HOST_PATHS}",
    "singularity": f"in a singularity container, {_NOT_HOST_PATHS}",
    "modal": f"in a modal sandbox, {_NOT_HOST_PATHS}",
    "daytona": f"in a daytona sandbox, {_NOT_HOST_PATHS}",
    "ssh": "on a remote machine over ssh, so the paths they touch are that machine's files, not this one's",
}
#: The session metadata key a configuration change writes the terminal backend into.
METADATA_KEY = "terminal_backend"


@dataclass(frozen=True)
class Environment:
    backend: str
    refusal: str | None  # why host checkpoints are not offered, or None on the host

    @property
    def on_host(self) -> bool:
        return self.refusal is None


def classify(backend: str | None) -> Environment:
    """Only the local backend shares this machine's paths; anything else (a container, a
    remote machine, a sandbox plugin, a name sessiondb does not know) is refused with the reason."""
    name = (backend or LOCAL).strip().lower()
    if name == LOCAL:
        return Environment(name, None)
    where = ELSEWHERE.get(name, f"in the `{name}` backend (a sandbox or plugin sessiondb cannot check), "
                                f"{_NOT_HOST_PATHS}")
    return Environment(name, f"the agent's tools run {where}: sessiondb takes no host checkpoint and offers no "
                             "diff or rollback for this session")
