"""Reading JSONL histories from where their last read stopped: lines with their numbers.

A file's place in the cursor is its inode, the byte offset and the line number read up
to, and its parser's small state. A file whose inode changed (rotated: a new file under
the old name) or that became shorter than the offset (truncated) is read again from its
start; one that did not grow is not opened. A last line without its newline is taken only
when it is whole JSON: a tool may be half way through writing it. A line longer than
MAX_RECORD_BYTES is read past in chunks, never held whole, and named; the cursor moves past
it like past any other line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from .core import MAX_RECORD_BYTES, Event, Malformed, Mark, TooDeep, loads

#: parse(path, records, state) -> events: `records` yields (line number, JSON object);
#: `state` is the parser's own dict, kept in the cursor between passes.
Parser = Callable[[Path, Iterable[tuple[int, dict[str, Any]]], dict[str, Any]], Iterator[Event]]
#: How much of an overlong line is read at a time while reading past it.
CHUNK = 1024 * 1024


class Lines:
    """The JSON objects of a file from `offset` on, numbered from `line` + 1."""

    def __init__(self, path: Path, offset: int, line: int, *, final: bool) -> None:
        self.path, self.offset, self.line, self.final = path, offset, line, final
        self.malformed: list[Malformed] = []

    def __iter__(self) -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            f = open(self.path, "rb")
        except OSError as exc:
            self.malformed.append(Malformed(str(self.path), None, f"cannot read: {exc.strerror or exc}"))
            return
        with f:
            f.seek(self.offset)
            while raw := f.readline(MAX_RECORD_BYTES + 1):
                whole = raw.endswith(b"\n")
                if not whole and len(raw) > MAX_RECORD_BYTES:
                    rest, whole = _read_past(f)
                    if not whole and not self.final:
                        return  # still being written: read it (past it) next time, whole
                    self.offset += len(raw) + rest
                    self.line += 1
                    self.malformed.append(Malformed(str(self.path), self.line,
                                                    f"longer than {MAX_RECORD_BYTES:,} bytes: skipped unread"))
                    continue
                value, error = _decode(raw)
                if not whole and error is not None and not self.final:
                    return  # still being written: read it next time, whole
                self.offset += len(raw)
                self.line += 1
                if error is not None:
                    if raw.strip():
                        self.malformed.append(Malformed(str(self.path), self.line, error))
                    continue
                yield self.line, value


def _read_past(f) -> tuple[int, bool]:
    """Read the rest of a line without keeping it: how many bytes it held, and whether it
    ended (with its newline) rather than at the end of the file."""
    size = 0
    while chunk := f.readline(CHUNK):
        size += len(chunk)
        if chunk.endswith(b"\n"):
            return size, True
    return size, False


def _decode(raw: bytes) -> tuple[Any, str | None]:
    try:
        value = loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except TooDeep as exc:
        return None, f"not read: {exc}"
    except ValueError as exc:
        return None, f"not JSON: {exc.msg} (column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"not a JSON object (a {type(value).__name__})"
    return value, None


def follow(paths: Iterable[Path], cursor: dict[str, Any], parse: Parser, *, final: bool) -> Iterator[Event]:
    """The events of every file's unread lines, each file followed by the Mark that records it."""
    places = cursor.setdefault("files", {})
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            continue  # gone between listing and reading
        key = str(path)
        place = places.get(key)
        if place is not None and place["inode"] == st.st_ino and st.st_size == place["offset"]:
            continue  # nothing new
        if place is None or place["inode"] != st.st_ino or st.st_size < place["offset"]:
            place = {"inode": st.st_ino, "offset": 0, "line": 0, "state": {}}
        state = json.loads(json.dumps(place["state"]))  # a copy: the cursor moves only at the Mark
        lines = Lines(path, place["offset"], place["line"], final=final)
        yield from parse(path, lines, state)
        yield from lines.malformed

        def record(key: str = key, inode: int = st.st_ino, lines: Lines = lines, state: dict = state) -> None:
            places[key] = {"inode": inode, "offset": lines.offset, "line": lines.line, "state": state}

        yield Mark(record)


def files_under(root: Path, patterns: Iterable[str]) -> list[Path]:
    """The files matching any pattern under root (or root itself, a file), in path order."""
    if root.is_file():
        return [root]
    found = {p for pattern in patterns for p in root.glob(pattern) if p.is_file()}
    return sorted(found, key=lambda p: os.fsencode(p))
