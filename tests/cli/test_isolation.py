"""S-24: a process under test never opens the user's real store; the suite proves it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sessiondb
from sessiondb import home as homes
from sessiondb.errors import RealHomeRefused

SESSIONDB = Path(sys.executable).with_name("sessiondb")
REAL = homes.real_home()


def rebuilt_environment(**extra):
    """The environment a careless script hands a child: the suite's marker and home dropped."""
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONDB_UNDER_TEST", "SESSIONDB_HOME")}
    return {**env, **extra}


def test_the_suite_marks_its_processes():
    assert os.environ.get("SESSIONDB_UNDER_TEST") == "1"


def test_opening_the_real_home_from_a_test_is_refused_and_touches_nothing():
    existed = REAL.exists()
    for attempt in (lambda: sessiondb.open_store(home=REAL), lambda: sessiondb.open_store(REAL / "state.db"),
                    lambda: sessiondb.open_store(home=REAL, profile="work")):
        with pytest.raises(RealHomeRefused, match="SESSIONDB_UNDER_TEST"):
            attempt()
    assert REAL.exists() == existed


def test_a_child_with_a_rebuilt_environment_is_refused_because_pytest_is_an_ancestor():
    existed = REAL.exists()
    code = "import sessiondb, sys\ntry:\n    sessiondb.open_store()\nexcept sessiondb.SessionDBError as e:\n" \
           "    print(e); sys.exit(3)\n"
    done = subprocess.run([sys.executable, "-c", code], env=rebuilt_environment(HOME=str(Path.home())),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "test runner" in done.stdout and "PID" in done.stdout
    assert REAL.exists() == existed


def test_the_cli_refuses_the_real_home_under_a_test():
    existed = REAL.exists()
    done = subprocess.run([str(SESSIONDB), "--home", str(REAL), "sessions", "list"], env=rebuilt_environment(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("Error: refusing to open the real store")
    assert len(done.stderr.strip().splitlines()) == 1
    assert REAL.exists() == existed


def test_other_homes_stay_open_under_test(tmp_path):
    with sessiondb.open_store(home=tmp_path / "elsewhere") as store:
        assert store.list_sessions().items == []


def test_the_explicit_variable_bypasses_the_refusal():
    target = REAL / "state.db"
    homes.refuse_real_home_under_test(target, environ={"SESSIONDB_UNDER_TEST": "1", "SESSIONDB_ALLOW_REAL_HOME": "1"})
    with pytest.raises(RealHomeRefused):
        homes.refuse_real_home_under_test(target, environ={"SESSIONDB_UNDER_TEST": "1"})


def test_without_a_marker_or_a_runner_the_real_home_opens():
    homes.refuse_real_home_under_test(REAL / "state.db", environ={}, runner=False)
    with pytest.raises(RealHomeRefused, match="PID 1"):
        homes.refuse_real_home_under_test(REAL / "state.db", environ={}, runner="PID 1 (pytest)")


@pytest.mark.parametrize("argv, expected", [
    (["/usr/bin/python3", "-m", "pytest", "-q"], True),
    (["/work/.venv/bin/pytest", "tests"], True),
    (["python", "/work/.venv/bin/py.test"], True),
    (["python3", "-m", "unittest"], True),
    (["C:\\venv\\Scripts\\pytest.exe", "tests"], True),
    (["C:\\Program Files\\Python312\\python.exe", "C:\\venv\\Scripts\\PyTest.EXE"], True),
    (["C:\\venv\\Scripts\\python.exe", "-m", "pytest"], True),
    (["C:\\venv\\Scripts\\sessiondb.exe", "sessions", "list"], False),
    (["python3", "-m", "sessiondb"], False),
    (["/usr/bin/sessiondb", "sessions", "list"], False),
    (["bash", "-c", "echo pytest"], False),
    ([], False),
])
def test_test_runners_are_recognised_by_their_command_line(argv, expected):
    assert homes.is_test_runner(argv) is expected


def test_this_process_descends_from_a_test_runner():
    assert homes.find_test_runner() is not None
