"""Store.verify() on a profile's schema: what only the server can check, around the checks
over rows (store/verify.py), in one snapshot, each naming what broke. The server keeps its
pages sound (checksums, WAL); checked here are the derived search words, recall stems and indexes, the
foreign keys, the fencing tokens handed out, and whether the database folds every
script's case."""

from __future__ import annotations

from typing import Callable

import psycopg

from ...model import VerifyReport
from ..rows import Rows

# (what the invariant is, a query returning one row per offender: its description)
_CHECKS = (
    ("the search words of every row are its text's", """
        SELECT 'message ' || id || ' carries stale search words' FROM messages
        WHERE words IS DISTINCT FROM message_words(role, content, parts) LIMIT 20"""),
    ("every search index is valid", """
        SELECT 'index ' || c.relname || ' is not valid' FROM pg_index AS i
        JOIN pg_class AS c ON c.oid = i.indexrelid JOIN pg_class AS t ON t.oid = i.indrelid
        WHERE t.relname = 'messages' AND t.relnamespace = current_schema()::regnamespace
          AND NOT (i.indisvalid AND i.indisready)"""),
    ("no row outlives its session (the foreign keys hold)", """
        SELECT 'constraint ' || conname || ' on ' || conrelid::regclass || ' is not validated'
        FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
          AND NOT convalidated"""),
)


#: Recall's stems (migration 0011), checked where the schema has them: a store of an older
#: release, examined by the doctor before its next open migrates it, has none yet.
_STEMS = ("the recall stems of every row are its text's", """
    SELECT 'message ' || id || ' carries stale recall stems' FROM messages
    WHERE stems IS DISTINCT FROM message_stems(role, content, parts) LIMIT 20""")

#: Every check, the tokens handed out, the database's character classification and whether
#: the schema has stems, in one statement: one round trip to the server (two with stems).
_ALL = " UNION ALL ".join(
    [f"(SELECT {i}, offender FROM ({query}) AS found(offender))" for i, (_, query) in enumerate(_CHECKS)]
    + ["(SELECT -1, (SELECT last_value FROM compaction_token)::text)", "(SELECT -2, current_setting('lc_ctype'))",
       "(SELECT -3, to_regprocedure('message_stems(text, text, text)')::text)"])
_ASCII_ONLY = ("C", "POSIX")  # the locales in which the server lower-cases ASCII letters only


def verify(conn: psycopg.Connection, rows: Rows, logical: Callable[[Rows, int, VerifyReport], None]) -> VerifyReport:
    """The server's checks, then `logical` on `rows` (this connection's), in the snapshot
    of the transaction `conn` is in."""
    report = VerifyReport()
    tokens = 0
    for check, offender in conn.execute(_ALL).fetchall():
        if check == -1:
            tokens = int(offender)
        elif check == -2:
            if offender.upper() in _ASCII_ONLY:
                report.notes.append(
                    f"the database's LC_CTYPE is {offender}, so the server folds the case of ASCII letters only: "
                    "a search for 'москва' misses 'Москва'; create a database with a UTF-8 locale "
                    "(CREATE DATABASE ... LC_CTYPE 'C.UTF-8' TEMPLATE template0) and move the store there "
                    "(sessiondb migrate --from URL --to URL)")
        elif check == -3:
            if offender is not None:
                report.problems += [f"{_STEMS[0]}: {row[0]}" for row in conn.execute(_STEMS[1])]
        else:
            report.problems.append(f"{_CHECKS[check][0]}: {offender}")
    logical(rows, tokens, report)
    return report
