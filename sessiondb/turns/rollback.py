"""The reply to a chat's `/rollback` command, for a gateway to send back (S-53).

    /rollback            the session's checkpoints
    /rollback diff N     what changed since checkpoint N
    /rollback N [force]  restore checkpoint N

A refusal (the tools run in a container or over ssh, or files changed since the agent's last write)
is answered with the same words the library, the CLI and the API use.
"""

from __future__ import annotations

from ..errors import CheckpointRefused, InvalidInput, NotFound
from .checkpoints import Checkpoints

USAGE = "usage: /rollback | /rollback diff N | /rollback N [force]"


def rollback_command(checkpoints: Checkpoints, session_id: str, arguments: str = "") -> str:
    words = arguments.split()
    try:
        if not words:
            env = checkpoints.environment(session_id)
            if not env.on_host:
                return f"Rollback is not available: {env.refusal}."
            found = checkpoints.list(session_id)
            if not found:
                return "No checkpoints yet: one is taken before the agent first changes your files in a turn."
            return "\n".join(f"{c.id}. {c.label} ({len(c.files)} files)" for c in found)
        if words[0] == "diff" and len(words) == 2:
            diff = checkpoints.diff(session_id, words[1])
            if not diff.changes:
                return f"Nothing changed since checkpoint {diff.checkpoint}."
            return "\n".join(f"{c.change}: {c.path}" for c in diff.changes)
        if words[0].isdigit() and words[1:] in ([], ["force"]):
            report = checkpoints.restore(session_id, words[0], force=words[1:] == ["force"])
            done = [f"{f.status}: {f.path}" for f in report.files] or ["nothing to change"]
            return "\n".join([f"Restored checkpoint {report.checkpoint} (the state before it is checkpoint "
                              f"{report.checkpoint_before}):", *done])
    except (CheckpointRefused, NotFound, InvalidInput) as exc:
        return f"Rollback refused: {exc}"
    return USAGE
