"""docs/cli.md stays true: every command of the CLI, and every option of each, is documented."""

from __future__ import annotations

import re
from pathlib import Path

import click

from sessiondb.cli import main

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def commands(group: click.Group, prefix: str = ""):
    for name, command in sorted(group.commands.items()):
        path = f"{prefix}{name}"
        yield path, command
        if isinstance(command, click.Group):
            yield from commands(command, path + " ")


def section(text: str, path: str) -> str | None:
    """The text under the heading that names `sessiondb PATH`, up to the next heading."""
    heading = re.compile(rf"^#+ .*`sessiondb {re.escape(path)}`\s*$", re.M)
    match = heading.search(text)
    if match is None:
        return None
    following = re.compile(r"^#+ ", re.M).search(text, match.end())
    return text[match.end(): following.start() if following else len(text)]


def test_every_command_and_option_is_documented():
    text = DOC.read_text(encoding="utf-8")
    missing = []
    for path, command in commands(main):
        body = section(text, path)
        if body is None:
            missing.append(f"a heading for `sessiondb {path}`")
            continue
        for param in command.params:
            if isinstance(param, click.Option):
                flags = [f for f in param.opts if f.startswith("--") and f != "--help"]
                if flags and not any(f in body for f in flags):
                    missing.append(f"`{flags[0]}` under `sessiondb {path}`")
    for flag in ("--home", "--profile", "-p"):
        assert flag in text
    assert not missing, "docs/cli.md lacks " + "; ".join(missing)


def test_the_doc_check_notices_an_undocumented_command():
    @main.command("zz-undocumented")
    def undocumented():
        """Not in the docs."""

    try:
        assert section(DOC.read_text(encoding="utf-8"), "zz-undocumented") is None
        assert any(path == "zz-undocumented" for path, _ in commands(main))
    finally:
        del main.commands["zz-undocumented"]
