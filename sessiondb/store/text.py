"""Message text as a store holds it: every Unicode string, kept exactly, as valid UTF-8.

sessiondb takes any Python text as a message's content, reasoning, parts or tool calls and
gives back exactly what it took, two characters included that an engine cannot hold:
a NUL, which PostgreSQL text cannot hold, and half a character (an unpaired surrogate, as
a string cut inside an emoji leaves, or JSON's "\\ud83d"), which has no UTF-8 form at
all. So on the way to the engine:

- ESCAPE itself (U+FFFE, a noncharacter no text is expected to hold) is doubled;
- a NUL becomes ESCAPE + "0" (PostgreSQL only: SQLite holds a NUL as it is);
- an unpaired surrogate becomes ESCAPE + "u" + its four hex digits + ESCAPE (closed by
  ESCAPE, which no word holds, so the words on either side stay words of their own and
  are found by search);

and on the way back the sequences are undone. Text without either character, which is
all of it in practice, passes through untouched, a scan for two characters. A JSON
column (parts, tool calls) goes through the same codec as text: its surrogates and ESCAPE
can only be inside its strings, and JSON writes a NUL as \\u0000.
"""

from __future__ import annotations

import re

ESCAPE = "\ufffe"
#: The columns of `messages` that hold text through this codec.
ESCAPED_COLUMNS = ("content", "reasoning", "parts", "tool_calls")
_SPECIAL = re.compile("[\ufffe\ud800-\udfff]")  # in a str, a surrogate is always unpaired
_SPECIAL_OR_NUL = re.compile("[\x00\ufffe\ud800-\udfff]")
_ESCAPED = re.compile(ESCAPE + "(?:([\ufffe0])|u([0-9a-f]{4})" + ESCAPE + ")")


def _escaped(found: re.Match[str]) -> str:
    char = found.group()
    if char == ESCAPE:
        return ESCAPE + ESCAPE
    if char == "\x00":
        return ESCAPE + "0"
    return f"{ESCAPE}u{ord(char):04x}{ESCAPE}"


def _undone(found: re.Match[str]) -> str:
    char, surrogate = found.groups()
    if surrogate is not None:
        return chr(int(surrogate, 16))
    return "\x00" if char == "0" else ESCAPE


def to_stored(text: str | None) -> str | None:
    """`text` as SQLite holds it: valid UTF-8, NUL kept."""
    if text is None or text.isascii():
        return text
    return _SPECIAL.sub(_escaped, text)


def to_server(text: str | None) -> str | None:
    """`text` as PostgreSQL holds it: valid UTF-8 without NUL."""
    if text is None or (text.isascii() and "\x00" not in text):
        return text
    return _SPECIAL_OR_NUL.sub(_escaped, text)


def from_stored(text: str | None) -> str | None:
    """The text `to_stored` or `to_server` made `text` of. A piece of such text (a snippet
    cut from it) is undone where its sequences are whole."""
    if text is None or ESCAPE not in text:
        return text
    return _ESCAPED.sub(_undone, text)

