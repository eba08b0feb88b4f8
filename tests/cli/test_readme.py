"""The README is true: every code block runs as written against what `make run` wrote (the
demo profile), finds what it says it finds, and runs again.

The Python blocks run as one script (the second continues the first); each `sessiondb`
line of the shell blocks runs as a command. Both passes use the same store, each from a
new working directory, because `backup` and `recover` never overwrite a file they made.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.M | re.S)
# `make run` serves until Ctrl-C and the others run the suites: not run from a test.
NOT_RUN = {"make run", "make test", "make reliability", "make test-long"}
NOTHING_FOUND = ("no sessions", "no messages found")


def blocks(lang: str) -> list[str]:
    return [body for kind, body in FENCE.findall(README.read_text(encoding="utf-8")) if kind == lang]


def command_lines() -> list[list[str]]:
    lines = []
    for body in blocks("sh"):
        for line in body.splitlines():
            words = shlex.split(line, comments=True)
            if not words:
                continue
            if " ".join(words) in NOT_RUN:
                continue
            assert words[0] == "sessiondb", f"a README command this test cannot run: {line}"
            lines.append(words)
    return lines


@pytest.fixture(scope="module")
def demo_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("readme") / "home"
    env = {**os.environ, "SESSIONDB_HOME": str(home), "NO_COLOR": "1"}
    subprocess.run([str(BIN / "sessiondb"), "demo"], env=env, check=True, capture_output=True, timeout=120)
    return home, env


def test_the_readme_has_python_blocks_and_commands_to_run():
    assert len(blocks("python")) >= 2 and len(command_lines()) >= 10


@pytest.mark.parametrize("attempt", [1, 2])
def test_the_python_blocks_run_and_find_what_they_say(demo_home, tmp_path, attempt):
    home, env = demo_home
    script = "\n\n".join(blocks("python"))
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    # the search loop prints each hit: the flaky test is found, highlighted
    assert "Fix the flaky upload test" in done.stdout and "<mark>" in done.stdout
    assert (tmp_path / "backup.jsonl").stat().st_size > 0 and (tmp_path / "restored" / "state.db").exists()


@pytest.mark.parametrize("attempt", [1, 2])
def test_every_readme_command_runs_and_finds_something(demo_home, tmp_path, attempt):
    home, env = demo_home
    for words in command_lines():
        done = subprocess.run([str(BIN / words[0]), *words[1:]], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        line = " ".join(words)
        assert done.returncode == 0, f"{line}: {done.stderr or done.stdout}"
        assert done.stdout.strip(), f"{line} printed nothing"
        assert not any(text in done.stdout for text in NOTHING_FOUND), f"{line}: {done.stdout}"
        if "--json" in words:
            json.loads(done.stdout)
        if "search" in words or "transcript" in words:
            assert "Trip to Kyoto" in done.stdout, f"{line}: {done.stdout}"
