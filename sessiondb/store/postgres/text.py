"""Message text as the server stores it: PostgreSQL text cannot hold a NUL character.

sessiondb takes any Unicode text as a message's content or reasoning, NUL included, and
gives back exactly what it took. So on the way to the server a NUL becomes ESCAPE + "0",
and ESCAPE itself (U+FFFE, a noncharacter no text is expected to hold) is doubled; on
the way back the pairs are undone. Text without either character, which is all of it in
practice, passes through untouched. (JSON columns need nothing: JSON writes NUL as \\u0000.)
"""

from __future__ import annotations

import re

ESCAPE = "\ufffe"
_PAIR = re.compile(ESCAPE + "(.)", re.DOTALL)


def to_server(text: str | None) -> str | None:
    if text is None or ("\x00" not in text and ESCAPE not in text):
        return text
    return text.replace(ESCAPE, ESCAPE + ESCAPE).replace("\x00", ESCAPE + "0")


def from_server(text: str | None) -> str | None:
    if text is None or ESCAPE not in text:
        return text
    return _PAIR.sub(lambda pair: "\x00" if pair.group(1) == "0" else pair.group(1), text)
