"""The package's imports flow one way (docs/ARCHITECTURE.md): read with ast, never run.

Every import statement of every module counts, including those inside functions: a
function-local import is still an arrow, and hiding a cycle inside a function does not
remove it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sessiondb"

#: Which layers each layer may import. Leaves are plain building blocks; the store's
#: interface is what backends implement; the neutral layer serves the contract over any
#: backend without naming one; users of the contract and the faces sit on top.
ALLOWED = {
    "leaf": {"leaf"},
    "interface": {"leaf", "interface"},
    "backend": {"leaf", "interface", "backend"},
    "neutral": {"leaf", "interface", "neutral"},
    "package": {"leaf", "interface", "neutral", "package"},
    "user": {"leaf", "interface", "neutral", "package", "user"},
    "face": {"leaf", "interface", "neutral", "package", "user", "face"},
}
LEAVES = {"errors", "model", "inputs", "home", "guidance", "query", "recall", "embedding", "keys", "formats", "exports",
          "files", "uids", "telemetry", "snapshots"}
INTERFACE = {"store.contract", "store.optional", "store.commands", "store.backend", "store.spool", "store.listing",
             "store.lease_holders", "store.rows", "store.sql"}
BACKENDS = ("store.sqlite", "store.postgres", "store.memory")
USERS = ("profiles", "usage", "titles", "gateway", "turns", "adapters", "importers", "testing")
FACES = ("cli", "api", "mcp")
#: Modules allowed to import some of sessiondb's own modules inside a function, and why.
LAZY = {"cli.serve": "the CLI loads the HTTP service (FastAPI, uvicorn) only for `serve`",
        "store.forgetting": "a forget loads the checkpoint files (hashlib) only when it runs"}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    def under(prefixes) -> bool:
        return any(module == p or module.startswith(p + ".") for p in prefixes)

    if module == "":
        return "package"
    if module in LEAVES:
        return "leaf"
    if module in INTERFACE or module == "store":
        return "interface"
    if under(BACKENDS):
        return "backend"
    if module.startswith("store."):
        return "neutral"
    if under(USERS):
        return "user"
    if under(FACES):
        return "face"
    raise AssertionError(f"sessiondb.{module} belongs to no layer: add it to tests/test_architecture.py")


def _modules() -> dict[str, Path]:
    return {_name(p): p for p in PACKAGE.rglob("*.py")}


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The sessiondb modules `module` imports (package-relative names)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name == "sessiondb" or a.name.startswith("sessiondb.")]
            found.update(t.removeprefix("sessiondb").lstrip(".") for t in targets)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                origin = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == "sessiondb" or node.module.startswith("sessiondb.")):
                origin = node.module.removeprefix("sessiondb").lstrip(".")
            else:
                continue
            for alias in node.names:
                sub = f"{origin}.{alias.name}" if origin else alias.name
                found.add(sub if sub in known else origin)
    found.discard(module)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: imports_of(m, p, set(modules)) for m, p in modules.items()}


def test_every_import_goes_down_the_layers(graph):
    wrong = [
        f"sessiondb.{m} ({layer_of(m)}) imports sessiondb.{t} ({layer_of(t)})"
        for m, targets in graph.items() for t in targets if layer_of(t) not in ALLOWED[layer_of(m)]
    ]
    assert not wrong, "\n".join(wrong)


def test_a_backend_imports_no_other_backend(graph):
    def backend(m: str) -> str | None:
        return next((b for b in BACKENDS if m == b or m.startswith(b + ".")), None)

    wrong = [f"sessiondb.{m} imports sessiondb.{t}" for m, targets in graph.items() for t in targets
             if backend(m) and backend(t) and backend(m) != backend(t)]
    assert not wrong, "\n".join(wrong)


def test_no_module_imports_itself_back(graph):
    """No cycles: a depth-first walk never meets a module still on its own path."""
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                walk(target, path + [target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert not cycles, "\n".join(" -> ".join(f"sessiondb.{m}" if m else "sessiondb" for m in c) for c in cycles)


def test_each_module_imports_in_one_block_at_its_top():
    """One import block per module, and sessiondb's own modules imported there, never
    inside a function (a third-party or platform module may be loaded where it is used)."""
    modules = _modules()
    wrong = []
    for module, path in modules.items():
        body = ast.parse(path.read_text(encoding="utf-8")).body
        at = [i for i, node in enumerate(body) if isinstance(node, (ast.Import, ast.ImportFrom))]
        if at and at != list(range(at[0], at[-1] + 1)):
            wrong.append(f"sessiondb.{module}: the imports are split into blocks")
        if module in LAZY:
            continue
        for top in body:
            if isinstance(top, (ast.Import, ast.ImportFrom)):
                continue
            for node in ast.walk(top):
                if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("sessiondb")):
                    wrong.append(f"sessiondb.{module}:{node.lineno} imports sessiondb code inside a block")
    assert not wrong, "\n".join(wrong)


def test_the_checker_sees_an_upward_import_and_a_cycle(tmp_path):
    """The rules above are only as good as the import reader: it must see what they forbid."""
    fake = {"store.sqlite.x": tmp_path / "x.py", "store.checked": tmp_path / "checked.py"}
    fake["store.sqlite.x"].write_text("def f():\n    from ..checked import CheckedStore\n")
    fake["store.checked"].write_text("from .sqlite import x\n")
    known = set(fake) | {"store.sqlite"}
    seen = {m: imports_of(m, p, known) for m, p in fake.items()}
    assert seen == {"store.sqlite.x": {"store.checked"}, "store.checked": {"store.sqlite.x"}}
    assert "neutral" not in ALLOWED[layer_of("store.sqlite.x")]
    assert "backend" not in ALLOWED[layer_of("store.checked")]
