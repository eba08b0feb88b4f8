"""Render the figures recorded by a reliability run into docs/reliability.md.

    python tests/reliability/render_figures.py FIGURES.jsonl docs/reliability.md [SECONDS]

FIGURES.jsonl is what the `figures` fixture (tests/reliability/conftest.py) appended while
SESSIONDB_FIGURES named it. The table replaces the text between the
`<!-- figures:start -->` and `<!-- figures:end -->` lines of the page; the prose around
it is left alone.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import apsw

START, END = "<!-- figures:start -->", "<!-- figures:end -->"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 1024 / 1024:.0f} GB RAM"
    except (OSError, ValueError, IndexError):
        pass
    return (f"{platform.system()} {platform.release()}, {os.cpu_count()} x {cpu}{mem}; Python "
            f"{platform.python_version()}, SQLite {apsw.sqlite_lib_version()} (APSW {apsw.apsw_version()})")


def render(records: list[dict], total: float | None) -> str:
    lines = [
        START,
        f"Recorded {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `make reliability` on: {machine()}."
        + (f" Whole run: {total:.0f} s." if total else ""),
        "",
    ]
    for tier, title in (("quick", "Quick tier (part of `make test`)"), ("long", "Long tier (`make reliability` only)")):
        rows = [r for r in records if r["tier"] == tier]
        if not rows:
            continue
        lines += [f"### {title}", "", "| test | tried | failed | duration | what was tried |", "|---|---:|---:|---:|---|"]
        for r in rows:
            name = r["test"].split("::")[-1]
            lines.append(f"| `{Path(r['test'].split('::')[0]).name}::{name}` | {r['tried']:,} {r['unit']} | "
                         f"{r['failed']:,} | {r['seconds']:.1f} s | {r['detail']} |")
        lines.append("")
    lines.append(END)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    source, page = Path(argv[1]), Path(argv[2])
    total = float(argv[3]) if len(argv) > 3 else None
    records = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    text = page.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{page} has no {START} ... {END} section to fill")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(head + render(records, total) + tail)
    print(f"{len(records)} figures written to {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
