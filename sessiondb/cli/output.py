"""What every command prints for a program: one writer, so `--json` is shaped the same
everywhere.

`--json` prints the result as indented UTF-8 JSON on stdout (a refusal: the HTTP API's
error object, on one line); `--json FIELDS` (comma
separated, as gh takes them) keeps only those fields of each object printed; a field the
result lacks is refused with the list of the fields it has (`--json help` shows them).
`--jq EXPR` filters the JSON through a jq program (the `jq` package: the jq C library's
own binding) and prints each result, strings as plain text, as gh does; it implies
`--json`. `list` and `search` also print rows as `--csv`, `--tsv` or `--nl` (one JSON
object a line), sqlite-utils' names, a nested value as JSON in its cell.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import click

from .. import model
from ..importers.core import ImportReport

#: A list of field names, as `--json` takes it.
FIELD_LIST = re.compile(r"[a-z_][a-z0-9_]*(,[a-z_][a-z0-9_]*)*")
#: Keys of the objects the CLI prints beyond the library's own dataclasses (model.py).
_CLI_KEYS = {"help", "name", "path", "server", "deleted", "output", "format", "sessions", "messages", "store",
             "backup", "bytes", "environment", "items", "stores", "seconds", "dry_run", "explanation",
             "clean", "summary", "policy", "report", "cleared", "released"}


def known_fields() -> set[str]:
    """The field names sessiondb prints: a word after `--json` that is one of them is
    read as FIELDS, any other word as the command's next argument."""
    classes = [c for c in vars(model).values() if dataclasses.is_dataclass(c)] + [ImportReport]
    return {f.name for c in classes for f in dataclasses.fields(c)} | _CLI_KEYS


def spell_fields(argv: list[str]) -> list[str]:
    """argv with each `--json` spelled with its value (`--json=FIELDS`, or `--json=` for
    everything), so a word after it is FIELDS only when it names fields: `search --json
    kyoto` still searches for kyoto."""
    known = None
    out: list[str] = []
    args = iter(enumerate(argv))
    for i, arg in args:
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg != "--json":
            out.append(arg)
            continue
        following = argv[i + 1] if i + 1 < len(argv) else None
        if following is not None and FIELD_LIST.fullmatch(following):
            known = known_fields() if known is None else known
            if set(following.split(",")) <= known:
                out.append(f"--json={following}")
                next(args)
                continue
        out.append("--json=")
    return out


@dataclass(frozen=True)
class JsonOutput:
    """What `--json [FIELDS]` and `--jq EXPR` asked for."""

    fields: tuple[str, ...] | None = None
    jq: str | None = None

    @property
    def whole(self) -> bool:
        """Nothing to pick or filter: the JSON may be streamed as it is read."""
        return self.fields is None and self.jq is None

    def emit(self, value: Any, *, within: str | None = None) -> None:
        """Print `value` as JSON; FIELDS pick the fields of each object of it (or of its
        `within` member's, where a command prints one object holding a list)."""
        if self.fields is not None:
            if within is None:
                value = _picked(value, self.fields)
            else:
                value = {**value, within: _picked(value[within], self.fields)}
        if self.jq is None:
            click.echo(json.dumps(value, ensure_ascii=False, indent=2))
            return
        for result in _jq(self.jq, value):
            click.echo(result if isinstance(result, str) else json.dumps(result, ensure_ascii=False))


def emit_error(code: str, message: str, detail: Any) -> None:
    """A refusal under --json: the HTTP API's error object, on one line (the last line of
    stdout, whatever the command printed before it)."""
    click.echo(json.dumps({"code": code, "message": message, "detail": detail}, ensure_ascii=False))


def _picked(value: Any, fields: tuple[str, ...]) -> Any:
    if isinstance(value, list):
        return [_picked(item, fields) for item in value]
    if not isinstance(value, dict):
        return value
    missing = [f for f in fields if f not in value]
    if missing:
        raise click.UsageError(f"no field {', '.join(map(repr, missing))} in this JSON; its fields: "
                               f"{', '.join(value)}")
    return {f: value[f] for f in fields}


def _jq(program: str, value: Any) -> list[Any]:
    try:
        import jq
    except ImportError:
        raise click.ClickException("--jq needs the jq package: pip install 'sessiondb[jq]'") from None
    try:
        return jq.compile(program).input_value(value).all()
    except ValueError as exc:
        raise click.UsageError(f"--jq {program!r}: {exc}") from None


def json_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--json [FIELDS]` and `--jq EXPR`: the command gets `as_json`, a JsonOutput or None."""
    @functools.wraps(command)
    def run(*args: Any, as_json: str | None = None, jq: str | None = None, **kwargs: Any) -> Any:
        return command(*args, as_json=_requested(as_json, jq), **kwargs)

    run = click.option("--jq", "jq", metavar="EXPR",
                       help="Filter the JSON through this jq program (implies --json).")(run)
    return click.option("--json", "as_json", is_flag=False, flag_value="", default=None, metavar="[FIELDS]",
                        help="Print the result as JSON; FIELDS (a,b,...) keeps only those fields.")(run)


def _requested(fields: str | None, jq: str | None) -> JsonOutput | None:
    if fields is None and jq is None:
        return None
    if fields and not FIELD_LIST.fullmatch(fields):
        raise click.UsageError(f"--json takes field names separated by commas, not {fields!r}")
    return JsonOutput(tuple(fields.split(",")) if fields else None, jq)


# --- rows -------------------------------------------------------------------------------


ROW_FORMATS = ("csv", "tsv", "nl")


def rows_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--csv`, `--tsv`, `--nl`: the command gets `rows`, the format named, or None."""
    for name, doc in reversed((("csv", "Print the rows as CSV, a header first."),
                               ("tsv", "Print the rows as tab-separated values, a header first."),
                               ("nl", "Print one JSON object a line."))):
        command = click.option(f"--{name}", "rows", flag_value=name, help=doc)(command)
    return command


def one_format(as_json: JsonOutput | None, rows: str | None) -> None:
    """Refuse --json (or --jq) together with a rows format: they are two answers."""
    if as_json and rows:
        raise click.UsageError(f"give --json or --{rows}, not both")


def emit_rows(rows: Iterable[dict[str, Any]], fmt: str) -> None:
    """The rows in `fmt`: CSV or TSV with a header of the first row's fields (a nested
    value as JSON in its cell, None as an empty one), or newline-delimited JSON."""
    out = sys.stdout
    if fmt == "nl":
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return
    writer = None
    for row in rows:
        if writer is None:
            writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
            writer.writerow(list(row))
        writer.writerow([_cell(v) for v in row.values()])


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (bool, dict, list)):  # as JSON: true, false, {...}
        return json.dumps(value, ensure_ascii=False)
    return value
