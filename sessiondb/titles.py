"""What a session is called where a person reads it: its title, else the first words its
user said, else a placeholder. One rule for every face (the CLI's `list`, the dashboard's
list, search hits and header), so a session reads the same wherever it is shown.
"""

from __future__ import annotations

from .model import Role
from .store.contract import Store

#: Messages read from the start of a session to find the user's first words.
FIRST_MESSAGES = 5
#: The most characters of those words shown in place of a title.
SHOWN = 60


def first_words(store: Store, session_id: str) -> str | None:
    """The first words the user said among the session's first messages, whitespace
    collapsed and cut to SHOWN characters with an ellipsis; None when the user said none.
    A user message with a display kind (context a tool sent, a compaction summary, a
    notification) is not words the user said."""
    for m in store.transcript(session_id, limit=FIRST_MESSAGES):
        if m.role == Role.USER.value and m.display_kind is None and m.text.strip():
            words = " ".join(m.text.split())
            return words if len(words) <= SHOWN else words[:SHOWN - 1] + "…"
    return None


def untitled_words(store: Store, sessions: dict[str, str | None]) -> dict[str, str | None]:
    """first_words of each session id whose title (the value) is empty; titled ones are not read."""
    return {sid: first_words(store, sid) for sid, title in sessions.items() if not title}
