"""Reading SQLite histories (llm, Hermes, OpenAI Agents, LangChain) read-only, from a watermark.

A tool's database is opened read-only through APSW (never the standard `sqlite3` module:
two SQLite copies in one process cancel each other's locks), inside one read transaction
so a pass sees one snapshot while the tool keeps writing. What was read is a rowid
watermark per table; a later pass reads again only the sessions that gained rows past
it. A database whose watermark went backwards (replaced, or rows deleted) is read whole
again: identities make that harmless.

A row's text and blob columns are measured in SQL before any is read (`fields`): a row
holding one larger than MAX_FIELD_BYTES is named by its rowid and skipped (or, for a
session's row, read without that column), so memory stays bounded whatever a database holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import apsw

from .core import MAX_FIELD_BYTES, MAX_RECORD_BYTES, Event, Malformed, Mark, TooDeep, loads

#: read(path, connection, state) -> events; `state` is kept in the cursor between passes.
Reader = Callable[[Path, apsw.Connection, dict[str, Any]], Iterator[Event]]


def follow(paths: Iterable[Path], cursor: dict[str, Any], read: Reader) -> Iterator[Event]:
    """The events of every database's new rows, each database followed by its Mark."""
    places = cursor.setdefault("databases", {})
    for path in paths:
        try:
            inode = path.stat().st_ino
        except OSError:
            continue
        key = str(path)
        place = places.get(key)
        state = json.loads(json.dumps(place["state"])) if place and place["inode"] == inode else {}
        try:
            conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        except apsw.Error as exc:
            yield Malformed(key, None, f"cannot open as SQLite: {exc}")
            continue
        try:
            conn.execute("BEGIN")
            yield from read(path, conn, state)
        except apsw.Error as exc:
            yield Malformed(key, None, f"not readable as this tool's database: {exc}")
            continue
        finally:
            conn.close()

        def record(key: str = key, inode: int = inode, state: dict = state) -> None:
            places[key] = {"inode": inode, "state": state}

        yield Mark(record)


def rows(conn: apsw.Connection, sql: str, params: Iterable[Any] = ()) -> Iterator[dict[str, Any]]:
    """The rows of a query as dicts keyed by column name."""
    cursor = conn.execute(sql, tuple(params))
    names: list[str] | None = None
    for row in cursor:
        if names is None:
            names = [d[0] for d in cursor.getdescription()]
        yield dict(zip(names, row))


def fields(conn: apsw.Connection, table: str, limit: int = MAX_FIELD_BYTES) -> str:
    """A select list of `table`'s rowid (as `_row`) and its columns, in which a value longer
    than `limit` bytes is NULL and never read (octet_length reads only its size), its
    column named in `_oversize` (empty when all fit)."""

    def ident(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    names = sorted(columns(conn, table))
    big = {n: f"octet_length({ident(table)}.{ident(n)}) > {int(limit)}" for n in names}
    kept = ", ".join(f"CASE WHEN {big[n]} THEN NULL ELSE {ident(table)}.{ident(n)} END AS {ident(n)}" for n in names)
    over = " || ".join(f"""CASE WHEN {big[n]} THEN ' {n.replace("'", "''")}' ELSE '' END""" for n in names)
    return f"{ident(table)}.rowid AS _row, {kept}, ltrim({over}) AS _oversize"


def oversize(path: Path, table: str, row: dict[str, Any], what: str = "skipped",
             limit: int = MAX_FIELD_BYTES) -> Malformed | None:
    """The report of a row `fields` found a value too large in, or None when all fit."""
    if not row.get("_oversize"):
        return None
    return Malformed(str(path), row["_row"], f"{table} row {row['_row']}: {row['_oversize']} larger than "
                                             f"{limit:,} bytes: {what}")


def tables(conn: apsw.Connection) -> set[str]:
    return {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def columns(conn: apsw.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def changed(conn: apsw.Connection, table: str, group: str, state: dict[str, Any]) -> list[Any]:
    """The values of `group` (a column or SQL expression naming the session) of `table`'s rows
    past the state's watermark, in first-row order; the watermark moves to the last rowid."""
    mark = f"{table}.rowid"
    top = conn.execute(f'SELECT max(rowid) FROM "{table}"').fetchone()[0] or 0
    since = state.get(mark, 0)
    if top < since:
        since = 0  # rows were deleted or the file replaced: read it whole again
    state[mark] = top
    query = f'SELECT {group} FROM "{table}" WHERE rowid > ? GROUP BY {group} ORDER BY min(rowid)'
    return [value for (value,) in conn.execute(query, (since,))]


def table_with(conn: apsw.Connection, preferred: str, needed: set[str]) -> str | None:
    """The table named `preferred`, else the one table whose columns include `needed`
    (tools let the table be renamed), else None."""
    names = tables(conn)
    if preferred in names and needed <= columns(conn, preferred):
        return preferred
    fits = sorted(t for t in names if needed <= columns(conn, t))
    return fits[0] if len(fits) == 1 else None


def json_items(path: Path, conn: apsw.Connection, state: dict[str, Any], table: str, column: str, kind: str,
               convert: Callable[[Any, int, Any, dict[str, Any]], Iterator[Event]]) -> Iterator[Event]:
    """A table of JSON items, one per row, grouped by `session_id` (the OpenAI Agents SDK's
    and LangChain's session tables, `kind` in reports): `convert(session, position, item,
    row)` gives each item's events; a row that is not JSON is reported and skipped. The
    table is `table`, else the one table with these columns (applications may rename it).
    A row too large (see `fields`) is reported and skipped but keeps its position."""
    found = table_with(conn, table, {"session_id", column})
    if found is None:
        yield Malformed(str(path), None, f"no {kind} table (session_id, {column}) in this database")
        return
    for session in changed(conn, found, "session_id", state):
        position = 0
        select = fields(conn, found, MAX_RECORD_BYTES)
        for row in rows(conn, f'SELECT {select} FROM "{found}" WHERE session_id IS ? ORDER BY rowid', (session,)):
            too_large = oversize(path, found, row, limit=MAX_RECORD_BYTES)
            if too_large is not None:
                yield too_large
                position += 1  # an item all the same, as when the store refused it: later ones keep their identity
                continue
            try:
                item = loads(row[column])
            except TooDeep as exc:
                yield Malformed(str(path), row["_row"], f"{found} row {row['_row']}: {column} not read: {exc}")
                continue
            except (TypeError, ValueError) as exc:
                yield Malformed(str(path), row["_row"], f"{found} row {row['_row']}: {column} is not JSON ({exc})")
                continue
            yield from convert(session, position, item, row)
            position += 1
