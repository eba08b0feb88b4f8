"""How much of a conversation handed back is already stored, matched against its whole history.

An agent's list is what it saw of the conversation, and then what it adds. What it saw is one
reading of the lineage's stored history (every session of the compaction chain, root first,
each in id order): from the start of the conversation, skipping the summaries it never saw
(a list that predates a compaction), or from a summary on (a list resumed after one), in both
cases skipping the summaries of compactions that came after (S-47, S-01, S-44).

A summary is recognised by its seq: summary rows, and the messages a compaction kept verbatim
with them, take the seq of the newest message they replace, while every other row is numbered
past the rows before it. A kept message also stands, out of order, where an older list still
has it. Rewound rows count for that numbering but are never matched: their words said again
are a new message of the live conversation.

The alignment is positional and greedy: each message of the list is the next row of the
reading that says the same, or it ends the stored prefix, and all that follows it is new (the
same words said again after the prefix are a new message). Of the readings, the one that
explains the longest prefix wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Hashable, Iterable, Sequence

from ..model import Message, MessageState

_REWOUND = MessageState.REWOUND.value


@dataclass
class Alignment:
    """What of a list is already stored: `rows` maps the index of each message of its stored
    prefix (`prefix` of them) to its row; `whole` says whether that prefix reaches the end of
    the history (nothing stored after it but summaries the list never saw)."""

    rows: dict[int, Message] = field(default_factory=dict)
    prefix: int = 0
    whole: bool = False


def align(
    history: Sequence[Message],
    count: int,
    same: Callable[[int, Message], bool],
    key: Callable[[int], Hashable],
    row_keys: Callable[[Message], Iterable[Hashable]],
) -> Alignment:
    """Align a list of `count` messages with `history` (the lineage's rows, rewound ones
    included, in order). `same(i, row)` says whether message i is that row; `key(i)` is a
    hashable key of message i, equal to one of `row_keys(row)` whenever `same(i, row)`."""
    rows: list[Message] = []
    summary: list[bool] = []
    top = 0
    for m in history:
        if m.state != _REWOUND:
            rows.append(m)
            summary.append(m.seq <= top)
        top = max(top, m.seq)
    if not count or not rows:
        return Alignment(whole=not rows)
    summaries: dict[Hashable, list[int]] = {}
    for j, m in enumerate(rows):
        if summary[j]:
            for k in row_keys(m):
                summaries.setdefault(k, []).append(j)

    def run(start: int) -> Alignment:
        cursor, taken, matched = start, set(), {}
        for i in range(count):
            j = cursor
            while j < len(rows) and (j in taken or (summary[j] and not same(i, rows[j]))):
                j += 1  # a summary this list never saw
            if j < len(rows) and same(i, rows[j]):
                cursor = j + 1
            else:  # a message a compaction kept, still where an older list has it
                j = next((j for j in summaries.get(key(i), ()) if j not in taken and same(i, rows[j])), None)
                if j is None:
                    break
            taken.add(j)
            matched[i] = rows[j]
        whole = all(summary[j] or j in taken for j in range(cursor, len(rows)))
        return Alignment(matched, len(matched), whole)

    # A list starts where the conversation starts (its first message may be one a compaction
    # kept) or where a summary does; the latest reading is tried first, and the first that
    # explains the whole list ends the search.
    starts = [0, *(j for j in summaries.get(key(0), ()) if j and same(0, rows[j]))]
    best = Alignment()
    for start in reversed(starts):
        found = run(start)
        if found.prefix > best.prefix:
            best = found
        if best.prefix == count:
            break
    return best
