"""Migration 0013_escaped_json: a message's parts and tool calls held through the codec of
store/sql.py, as its content and reasoning always were.

Frozen once released: change the schema with a new migration appended to MIGRATIONS.

From this release a message's parts and tool calls keep every Python string exactly, half
a character (an unpaired surrogate) included, escaped behind U+FFFE, which is doubled when
the text holds it. Those columns held U+FFFE as it was before, so it is doubled here and
reads back as it was written. The JSON stays JSON (U+FFFE can only be inside its strings),
so the words made of it do not change; no other row is rewritten.
"""

from __future__ import annotations

NAME = "0013_escaped_json"

SQL = """
UPDATE {schema}.messages SET parts = replace(parts, chr(65534), repeat(chr(65534), 2))
    WHERE strpos(parts, chr(65534)) > 0;
UPDATE {schema}.messages SET tool_calls = replace(tool_calls, chr(65534), repeat(chr(65534), 2))
    WHERE strpos(tool_calls, chr(65534)) > 0;
"""
