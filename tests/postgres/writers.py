"""Starting writer processes (append_worker.py) and reading what they acknowledged."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).parent / "append_worker.py"


def start_writer(url: str, schema: str, writer: str, count: int, sessions: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), url, schema, writer, str(count), *sessions],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def acknowledged(process: subprocess.Popen, timeout: float = 300) -> tuple[list[str], str]:
    """(the uids the writer acknowledged, its stderr) once it exits."""
    out, err = process.communicate(timeout=timeout)
    return [line.split()[1] for line in out.splitlines() if line.startswith("ack ")], err
