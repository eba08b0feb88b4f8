"""Every cited field scenario is defined in docs/scenarios.md, and every test it names exists.

An id is cited as `S-nn` anywhere in sessiondb/, tests/, docs/ (docs/scenarios.md aside),
bench/ or README.md; a range `S-30..S-36` cites every id between its ends. An id is
defined by a heading `### S-nn ...` in docs/scenarios.md. A test is named there as
`tests/<path>.py::test_<name>` (or `sessiondb/testing/contract/<module>.py::test_<name>`, the
contract suite) and must be a function defined in that file.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "docs" / "scenarios.md"
CITING = ("sessiondb", "tests", "docs", "bench")
SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".sql", ".js", ".html", ".json"}

_RANGE = re.compile(r"S-(\d\d)\.\.S-(\d\d)")
_ID = re.compile(r"\bS-(\d\d)\b")
_HEADING = re.compile(r"^#+\s+S-(\d\d)\b", re.MULTILINE)
_TEST_REF = re.compile(r"((?:tests|sessiondb/testing)/[\w/]+\.py)::(test_\w+)")


def cited_in(text: str) -> set[str]:
    ids = {f"S-{n}" for n in _ID.findall(text)}
    for low, high in _RANGE.findall(text):
        ids |= {f"S-{n:02d}" for n in range(int(low), int(high) + 1)}
    return ids


def citing_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for top in CITING:
        files += [p for p in (ROOT / top).rglob("*") if p.is_file() and p.suffix in SUFFIXES]
    return [p for p in files if p.exists() and p.resolve() != SCENARIOS.resolve() and "__pycache__" not in p.parts]


def citations() -> dict[str, set[str]]:
    where: dict[str, set[str]] = {}
    for path in citing_files():
        for sid in cited_in(path.read_text(encoding="utf-8", errors="replace")):
            where.setdefault(sid, set()).add(str(path.relative_to(ROOT)))
    return where


def defined() -> set[str]:
    return {f"S-{n}" for n in _HEADING.findall(SCENARIOS.read_text(encoding="utf-8"))}


def test_cited_ids_are_found_at_all():
    assert len(citations()) > 10  # the scan itself works: the project cites many scenarios


def test_every_cited_scenario_is_defined_in_docs_scenarios_md():
    missing = {sid: sorted(paths) for sid, paths in citations().items() if sid not in defined()}
    assert not missing, f"cited but not defined in docs/scenarios.md: {missing}"


def test_every_test_docs_scenarios_md_names_exists():
    refs = _TEST_REF.findall(SCENARIOS.read_text(encoding="utf-8"))
    assert refs, "docs/scenarios.md names no tests"
    absent = []
    for path, name in refs:
        file = ROOT / path
        source = file.read_text(encoding="utf-8") if file.is_file() else ""
        if not re.search(rf"^\s*(?:async\s+)?def {name}\(", source, re.MULTILINE):
            absent.append(f"{path}::{name}")
    assert not absent, f"docs/scenarios.md names tests that do not exist: {absent}"


def test_every_defined_scenario_names_a_test():
    text = SCENARIOS.read_text(encoding="utf-8")
    sections = re.split(r"^(?=#+\s+S-\d\d\b)", text, flags=re.MULTILINE)[1:]
    bare = [s.splitlines()[0] for s in sections if not _TEST_REF.search(s)]
    assert not bare, f"scenarios with no test named: {bare}"
