"""A backend outside sessiondb runs the contract suite against its own locations: a
project of its own registers its scheme and runs the suite's modules with the plugin
(`-p sessiondb.testing --sessiondb-backend=SCHEME://`), in a pytest run of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "sessiondb" / "testing" / "contract" / "test_rows.py"  # one of the suite's modules, as the plugin runs any

CONFTEST = '''
import sessiondb
from sessiondb.store.memory import MemoryBackend

OPENED = []


def open_backend(target, *, profile, **options):
    OPENED.append(target)
    return MemoryBackend("elsewhere-" + target.split("://", 1)[1], profile=profile)


sessiondb.register_backend("elsewhere", open_backend)


def pytest_sessionfinish(session):
    print(f"opened {len(OPENED)} stores, the first {OPENED[0] if OPENED else None}")
'''


def _run(project: Path, *arguments: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "SESSIONDB_TEST_BACKEND"}
    env.update(PYTHONPATH=str(ROOT), **environment)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "-p", "sessiondb.testing",
                           "--rootdir", str(project), "-c", str(project / "pytest.ini"), *arguments, str(project)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)


def test_a_third_partys_backend_runs_the_suite_by_its_scheme(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    shutil.copy(SUITE, tmp_path / SUITE.name)
    run = _run(tmp_path, "--sessiondb-backend=elsewhere://")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "13 passed" in run.stdout
    assert "opened 13 stores, the first elsewhere://t" in run.stdout


def test_the_backend_can_be_named_by_the_environment_and_a_broken_one_fails(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # A backend whose reads see a store of their own, not what was written: the suite says so.
    broken = CONFTEST.replace("sessiondb.register_backend", """
class Forgetful(MemoryBackend):
    def read(self, work):
        return MemoryBackend().read(work)


def open_forgetful(target, *, profile, **options):
    return Forgetful(profile=profile)


sessiondb.register_backend("forgetful", open_forgetful)
sessiondb.register_backend""")
    (tmp_path / "conftest.py").write_text(broken)
    shutil.copy(SUITE, tmp_path / SUITE.name)
    run = _run(tmp_path, SESSIONDB_TEST_BACKEND="forgetful://")
    assert run.returncode == 1 and "test_insert_then_select_gives_the_rows_back_with_growing_ids[forgetful://]" in run.stdout, \
        run.stdout + run.stderr
