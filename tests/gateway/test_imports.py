"""The gateway's imports flow one way: one block per module, none inside functions, no cycle, no backend."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import sessiondb

PACKAGE = Path(sessiondb.__file__).parent
GATEWAY = sorted((PACKAGE / "gateway").glob("*.py"))
MODULES = [*GATEWAY, PACKAGE / "keys.py", PACKAGE / "cli" / "gateway.py", PACKAGE / "store" / "sqlite" / "routing.py"]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The absolute names an import statement of `path` reaches (`from . import x` reaches `pkg.x`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    names = [f"{base}.{alias.name}" for alias in node.names]
    return names if node.module is None else [base, *names]


def graph() -> dict[str, set[str]]:
    names = {module_name(p) for p in GATEWAY}
    edges: dict[str, set[str]] = {}
    for path in GATEWAY:
        tree = ast.parse(path.read_text())
        targets = {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for t in imported(path, n)}
        edges[module_name(path)] = (targets & names) - {module_name(path)}
    return edges


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_each_module_imports_in_one_block_at_its_top(path):
    body = ast.parse(path.read_text()).body
    nested = [n.lineno for top in body if not isinstance(top, (ast.Import, ast.ImportFrom))
              for n in ast.walk(top) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert nested == [], f"imports inside functions, classes or conditions at lines {nested}"
    at = [i for i, n in enumerate(body) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert at == list(range(at[0], at[-1] + 1)) if at else True, "the imports are split into blocks"


def test_the_gateways_modules_import_one_another_without_a_cycle():
    edges = graph()
    assert "sessiondb.gateway.gateway" not in edges["sessiondb.gateway.recovery"]
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join((*path, name))}"
        if name in done:
            return
        for target in edges[name]:
            visit(target, (*path, name))
        done.add(name)

    for name in edges:
        visit(name, ())


@pytest.mark.parametrize("path", GATEWAY, ids=lambda p: module_name(p))
def test_no_gateway_module_imports_a_backend(path):
    tree = ast.parse(path.read_text())
    reached = {t for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for t in imported(path, n)}
    assert not {t for t in reached if t.startswith(("sessiondb.store.sqlite", "apsw"))}
