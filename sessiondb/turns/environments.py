"""Where the agent's tools run, and so whether host checkpoints are true (S-53).

Checkpoints read and write the host's files. When the tools run in a container or a
remote sandbox, the paths they touch are not the host's paths, so a host snapshot would
capture the wrong files and a rollback would rewrite files the agent never touched. The
classification is made from the backend configured now, at every call: a session that
started local and was moved to docker is refused from that moment on.
"""

from __future__ import annotations

from dataclasses import dataclass

LOCAL = "local"
#: Backends known to run the tools away from the host's filesystem.
CONTAINERS = {
    "docker": "a docker container",
    "singularity": "a singularity container",
    "modal": "a modal sandbox",
    "daytona": "a daytona sandbox",
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
    """Only the local backend shares the host's paths; anything else (a container, a
    sandbox plugin, a name sessiondb does not know) is refused with the reason."""
    name = (backend or LOCAL).strip().lower()
    if name == LOCAL:
        return Environment(name, None)
    where = CONTAINERS.get(name, f"the `{name}` backend (a sandbox or plugin sessiondb cannot check)")
    return Environment(name, f"the agent's tools run in {where}, so host paths are not the agent's paths: "
                             "sessiondb takes no host checkpoint and offers no diff or rollback for this session")
