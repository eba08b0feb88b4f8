"""Every example of docs/adapters/ runs as written.

Each page's ```python blocks run in order as one program, in a fresh interpreter with
an empty SESSIONDB_HOME as its working directory. A page whose example talks to a model
gets its environment from `tests/adapters/doc_environments/<page>.py`: a context
manager `environment(tmp_path)` yielding extra environment variables (the address of a
scripted model server, `doc_environments/scripted.py`), so the example itself stays what
a reader would type.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "adapters"
ENVIRONMENTS = Path(__file__).resolve().parent / "doc_environments"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PAGES = sorted(DOCS.glob("*.md"))


def program_of(page: Path) -> str:
    return "\n".join(BLOCK.findall(page.read_text(encoding="utf-8")))


def environment_of(page: Path, tmp_path: Path):
    hook = ENVIRONMENTS / f"{page.stem.replace('-', '_')}.py"
    if not hook.exists():
        return contextlib.nullcontext({})
    if str(ENVIRONMENTS) not in sys.path:
        sys.path.insert(0, str(ENVIRONMENTS))  # the hooks share scripted.py, the scripted model server
    spec = importlib.util.spec_from_file_location(f"doc_environment_{hook.stem}", hook)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.environment(tmp_path)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_page_example_runs(page, tmp_path):
    program = program_of(page)
    assert program.strip(), f"{page.name} has no ```python example"
    home = tmp_path / "home"
    home.mkdir()
    with environment_of(page, tmp_path) as extra:
        # This checkout first on the path: the venv's editable install may point at another one.
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "SESSIONDB_HOME": str(home), "PYTHONPATH": path, **extra}
        done = subprocess.run([sys.executable, "-c", program], cwd=home, env=env,
                              capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{page.name}'s example failed:\n{done.stdout}\n{done.stderr}"


def test_a_failing_example_is_noticed(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text("Text.\n\n```python\nraise SystemExit(3)\n```\n", encoding="utf-8")
    assert program_of(page) == "raise SystemExit(3)\n"
    assert subprocess.run([sys.executable, "-c", program_of(page)]).returncode == 3
