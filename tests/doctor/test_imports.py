"""The SQLite safety code and the migrations import downward only, in one block at the top:
no function-local import, nothing from the sessiondb package root (open_store and the
faces sit above them), and the registry reaches the startup probe without the doctor."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sessiondb.store.sqlite as sqlite_backend

BACKEND = Path(sqlite_backend.__file__).parent
MODULES = sorted([*(BACKEND / "safety").glob("*.py"), *(BACKEND / "migrations").glob("*.py")])


def imports(path: Path) -> list[tuple[ast.stmt, bool]]:
    """Every import statement of the module, and whether it is at the top level."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    return [(node, id(node) in top) for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def absolute(path: Path, node: ast.ImportFrom) -> str:
    package = path.relative_to(BACKEND.parent.parent.parent).with_suffix("").parts[:-1]
    base = package[: len(package) - node.level + 1] if node.level else ()
    return ".".join([*base, *([node.module] if node.module else [])])


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_import_is_at_the_top_and_none_goes_up_to_the_package_root(path):
    for node, at_top in imports(path):
        assert at_top, f"{path.name}:{node.lineno} imports inside a function"
        if isinstance(node, ast.ImportFrom):
            target = absolute(path, node)
            assert target != "sessiondb", f"{path.name}:{node.lineno} imports from the package root"
            assert not target.startswith(("sessiondb.cli", "sessiondb.api", "sessiondb.gateway")), target


def test_the_registry_imports_the_startup_probe_not_the_doctor():
    registry = BACKEND / "registry.py"
    targets = {absolute(registry, n) for n, _ in imports(registry) if isinstance(n, ast.ImportFrom)}
    assert "sessiondb.store.sqlite.safety.probe" in targets
    assert not {t for t in targets if t.endswith((".doctor", ".examine", ".repair"))}
