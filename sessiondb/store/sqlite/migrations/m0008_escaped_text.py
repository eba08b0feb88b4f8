"""Migration 0008_escaped_text: a message's text held through the codec of store/sql.py.

Frozen once released: never edit it; change the schema with a new migration appended to MIGRATIONS.
From this release a message's content, reasoning, parts and tool calls keep every Python
string exactly, half a character (an unpaired surrogate) included, escaped behind U+FFFE,
which is doubled when the text holds it. Text stored before held U+FFFE as it was, so it
is doubled here, and reads back as it was written. No other row changes: U+FFFE is a
noncharacter that text is not expected to hold, and the scan reads each row once.
"""

from __future__ import annotations

import apsw

NAME = "0008_escaped_text"


def apply(conn: apsw.Connection) -> None:
    for column in ("content", "reasoning", "parts", "tool_calls"):
        conn.execute(f"UPDATE messages SET {column} = replace({column}, char(65534), char(65534, 65534)) "
                     f"WHERE instr({column}, char(65534)) > 0")
