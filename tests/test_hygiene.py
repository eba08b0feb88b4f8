"""Tests are claims, not clocks: no test in the default run asserts how long something took.

A duration measured on the wall clock depends on the machine's load, so an assertion on one
fails on a busy machine while the code is right (and passes on a quiet one while it is
wrong). The default suite is read with ast, never run: inside every test function not marked
`long`, a value taken from a duration clock (time.monotonic, perf_counter, ...) taints every
name computed from it, and an `assert` that orders a tainted value against something, or
that orders a name about latencies, is a wall-clock assertion. A bound on a hang (waiting at
most so long for something that must happen at all) is not a latency claim; the few that
are written as asserts are listed in HANG_BOUNDS, each with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Where the default run's tests live: tests/ and the contract suite.
TEST_ROOTS = (ROOT / "tests", ROOT / "sessiondb" / "testing")

#: The clocks that measure durations. time.time() is left out on purpose: the suite compares
#: stored timestamps with the moments before and after a call, which holds on any machine.
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time", "thread_time"}
ORDERINGS = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)

#: (file relative to the repository, test function): why its clock assertion bounds a hang, not a latency.
HANG_BOUNDS = {
    ("sessiondb/testing/contract/test_async.py", "test_a_cancelled_append_still_lands_once_it_was_handed_to_the_writer"):
        "polls until the append reaches the store and fails only if it never does",
}


def _is_clock_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in CLOCKS


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _words_in(node: ast.AST) -> set[str]:
    """Every name and attribute name in an expression (`max(latencies)`, `report.latency_p99`)."""
    return _names_in(node) | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _tainted(node: ast.AST, tainted: set[str]) -> bool:
    return any(_is_clock_call(n) for n in ast.walk(node)) or bool(_names_in(node) & tainted)


def _taint(function: ast.AST) -> set[str]:
    """Names holding a clock reading or anything computed from one (to a fixed point, since
    a loop may compute a name before the line that reads the clock)."""
    tainted: set[str] = set()
    while True:
        before = len(tainted)
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                if _tainted(node.value, tainted):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        tainted |= _names_in(target)
            # durations.append(time.monotonic() - started) makes `durations` a list of durations
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in {"append", "extend", "add"} and isinstance(node.func.value, ast.Name)
                  and any(_tainted(arg, tainted) for arg in node.args)):
                tainted.add(node.func.value.id)
        if len(tainted) == before:
            return tainted


def _long_marks(tree: ast.Module) -> set[str]:
    """Module-level names bound to the long marker (`LONG = pytest.mark.long`, `pytestmark`)."""
    return {t.id for node in tree.body if isinstance(node, ast.Assign) and "mark.long" in ast.unparse(node.value)
            for t in node.targets if isinstance(t, ast.Name)}


def _is_long(function: ast.FunctionDef, marks: set[str]) -> bool:
    return any("mark.long" in ast.unparse(d) or ast.unparse(d) in marks for d in function.decorator_list)


def wall_clock_assertions(source: str) -> list[tuple[str, int, str]]:
    """(test function, line, assertion) for every wall-clock assertion in a module's source."""
    tree = ast.parse(source)
    marks = _long_marks(tree)
    if "pytestmark" in marks:
        return []
    found = []
    # Test functions at the top and in classes; a function nested in one is read as part of it.
    functions = [node for body in [tree.body, *(c.body for c in tree.body if isinstance(c, ast.ClassDef))]
                 for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        if _is_long(function, marks):
            continue
        tainted = _taint(function)
        for node in ast.walk(function):
            if not isinstance(node, ast.Assert):
                continue
            for compare in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
                if not any(isinstance(op, ORDERINGS) for op in compare.ops):
                    continue
                operands = [compare.left, *compare.comparators]
                if any(_tainted(o, tainted) or any("latenc" in name.lower() for name in _words_in(o))
                       for o in operands):
                    found.append((function.name, node.lineno, ast.unparse(node.test)))
                    break
    return found


def test_no_test_in_the_default_run_asserts_on_the_wall_clock():
    found = []
    for path in sorted(p for root in TEST_ROOTS for p in root.rglob("*.py")):
        if not (path.name.startswith("test_") or path.name == "conftest.py"):
            continue
        relative = path.relative_to(ROOT).as_posix()
        for function, line, text in wall_clock_assertions(path.read_text()):
            if (relative, function) not in HANG_BOUNDS:
                found.append(f"{relative}:{line} in {function}: assert {text}")
    assert found == [], "wall-clock assertions in the default run:\n" + "\n".join(found)


def test_the_allow_list_names_only_assertions_that_exist():
    # An entry whose assertion went away would silently allow the next one written there.
    present = set()
    for relative, function in HANG_BOUNDS:
        hits = wall_clock_assertions((ROOT / relative).read_text())
        present |= {(relative, name) for name, _, _ in hits if name == function}
    assert present == set(HANG_BOUNDS)


def test_the_scan_finds_the_shapes_of_a_wall_clock_assertion():
    caught = wall_clock_assertions('''
import time, pytest
from time import perf_counter

def test_duration():
    started = time.monotonic()
    work()
    waited = time.monotonic() - started
    assert waited >= 0.3, waited

def test_latencies():
    latencies = []
    for _ in range(10):
        t0 = perf_counter()
        work()
        latencies.append(perf_counter() - t0)
    assert max(latencies) < 1.0

def test_inline():
    t0 = time.perf_counter()
    work()
    assert time.perf_counter() - t0 < 2

def test_named_latency(store):
    assert store.latency_p99 <= 0.5

LONG = pytest.mark.long

@pytest.mark.long
def test_long_tier_may():
    t0 = time.monotonic()
    assert time.monotonic() - t0 < 600

@LONG
def test_long_tier_by_another_name_may():
    t0 = time.monotonic()
    assert time.monotonic() - t0 < 600

def test_timestamps_are_not_durations(store):
    before = time.time()
    stamp = store.append()
    assert before - 1 <= stamp <= time.time() + 1
    assert len([time.monotonic()]) == 1
''')
    assert [name for name, _, _ in caught] == ["test_duration", "test_latencies", "test_inline", "test_named_latency"]
