"""How the sessions commands show things: rich tables and transcripts, JSON, Markdown.

Nothing here calls the library; commands pass in what they got from it. Color follows the
terminal and is off when NO_COLOR is set; message text is always printed as text, never
interpreted as rich markup.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from datetime import datetime
from typing import Any, Iterable, Iterator

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..exports import call_summary, when
from ..model import Message, SearchHit, Session, StoreStats

HIGHLIGHT = re.compile(r"<mark>(.*?)</mark>", re.S)
TOOL_OUTPUT_SHOWN = 2000  # characters of a tool message `show` prints
SHORT_TEXT = 20  # columns of a short free-text cell (a source, a provider) before its ellipsis
PIPE_WIDTH = 4096  # columns when stdout is not a terminal


def console() -> Console:
    """A console on the current stdout (click's, under tests), without color if NO_COLOR is set.

    Into a pipe or file, lines are not cut to 80 columns: ids must reach `grep` whole.
    """
    out = sys.stdout
    wide = None if _is_terminal(out) else PIPE_WIDTH
    return Console(file=out, no_color=bool(os.environ.get("NO_COLOR")), highlight=False, width=wide)


def on_terminal() -> bool:
    """Whether a person reads stdout: then long output is paged and progress is drawn."""
    return _is_terminal(sys.stdout)


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def ago(ts: float | None, now: float | None = None) -> str:
    """A time as a person says it: just now, 5m ago, 3h ago, 2d ago, or the date."""
    if ts is None:
        return "never"
    delta = (time.time() if now is None else now) - ts
    if delta < 60:
        return "just now"
    if delta < 3600:
        return f"{int(delta // 60)}m ago"
    if delta < 86400:
        return f"{int(delta // 3600)}h ago"
    if delta < 30 * 86400:
        return f"{int(delta // 86400)}d ago"
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d")


def flags(session: Session) -> str:
    return " ".join(name for name in ("pinned", "archived", "hidden") if getattr(session, name))


def label(session: Session, first_words: str | None = None) -> str:
    """The title, or the first words the user said (titles.first_words), or a placeholder."""
    return session.title or first_words or "(untitled)"


# --- sessions ---------------------------------------------------------------------------


def room(wanted: list[int], fixed: list[int]) -> list[int]:
    """Widths for a table's free-text columns, which want at most `wanted`, beside columns
    of `fixed` widths that are never cut: on a narrow terminal the free text gives way
    (cut with an ellipsis) so that ids and figures stay whole."""
    separators = 3 * (len(wanted) + len(fixed) - 1)
    left = console().width - sum(fixed) - separators
    if sum(wanted) <= left:
        return wanted
    return [max(4, want * left // sum(wanted)) for want in wanted]


def session_table(rows: list[tuple[Session, str | None]]) -> None:
    table = Table(show_edge=False, pad_edge=False)
    show_flags = any(flags(s) for s, _ in rows)
    id_width = max((len(s.id) for s, _ in rows), default=2)
    fixed = [len("last active"), len("messages"), id_width] + ([len("pinned archived hidden")] if show_flags else [])
    title, source = room([48, SHORT_TEXT], fixed)
    table.add_column("title", overflow="ellipsis", no_wrap=True, max_width=title)
    table.add_column("source", overflow="ellipsis", no_wrap=True, max_width=source)
    table.add_column("last active", no_wrap=True)
    table.add_column("messages", justify="right", no_wrap=True)
    table.add_column("id", no_wrap=True, min_width=id_width)
    if show_flags:
        table.add_column("flags", no_wrap=True)
    for session, words in rows:
        cells = [Text(label(session, words)), Text(session.source),
                 ago(session.last_activity_at or session.started_at), str(session.message_count), session.id]
        if show_flags:
            cells.append(flags(session))
        table.add_row(*cells)
    console().print(table)


def session_header(session: Session, out: Console | None = None) -> None:
    out = out or console()
    out.print(Text(session.title or "(untitled)", style="bold"))
    facts = [f"id {session.id}", f"source {session.source}", f"started {when(session.started_at)}",
             f"last active {ago(session.last_activity_at or session.started_at)}",
             f"{session.message_count} messages"]
    if session.parent_session_id:
        facts.append(f"continues {session.parent_session_id}")
    if session.ended_at:
        facts.append(f"ended {when(session.ended_at)} ({session.end_reason})")
    if flags(session):
        facts.append(flags(session))
    out.print(Text(" · ".join(facts), style="dim"))


ROLE_STYLES = {"user": "bold cyan", "assistant": "bold green", "tool": "bold yellow", "system": "bold magenta"}


def transcript(messages: Iterable[Message], out: Console | None = None) -> None:
    out = out or console()
    for m in messages:
        head = Text()
        head.append(m.role, style=ROLE_STYLES.get(m.role, "bold"))
        if m.tool_name:
            head.append(f" ({m.tool_name})")
        head.append(f"  {when(m.timestamp)}  #{m.id}", style="dim")
        if m.state != "active":
            head.append(f"  [{m.state}]", style="dim italic")
        if m.display_kind:
            head.append(f"  [{m.display_kind}]", style="dim italic")
        out.print()
        out.print(head)
        text = m.text
        if m.role == "tool" and len(text) > TOOL_OUTPUT_SHOWN:
            text = text[:TOOL_OUTPUT_SHOWN] + f"\n… ({len(text) - TOOL_OUTPUT_SHOWN:,} more characters)"
        if text:
            out.print(Text(text))
        for call in m.tool_calls or []:
            out.print(Text(f"→ {call_summary(call)}", style="dim"))


PAGED_BATCH = 100  # messages rendered into the pager at a time


def paged(session: Session, messages: Iterable[Message]) -> Iterator[str]:
    """The header and transcript as rendered text, a batch at a time, for click's pager:
    the pager shows the first screen while the rest is still being read."""
    width = console().width
    batch: list[Message] = []

    def rendered(write) -> str:
        buffer = io.StringIO()
        write(Console(file=buffer, force_terminal=True, width=width, no_color=bool(os.environ.get("NO_COLOR")),
                      highlight=False))
        return buffer.getvalue()

    yield rendered(lambda out: session_header(session, out))
    for m in messages:
        batch.append(m)
        if len(batch) == PAGED_BATCH:
            yield rendered(lambda out: transcript(batch, out))
            batch = []
    if batch:
        yield rendered(lambda out: transcript(batch, out))


# --- search -----------------------------------------------------------------------------


def highlighted(snippet: str) -> Text:
    """A snippet with its <mark> spans in bold (underlined, so they show without color)."""
    text, at = Text(), 0
    for match in HIGHLIGHT.finditer(snippet):
        text.append(snippet[at:match.start()])
        text.append(match.group(1), style="bold underline")
        at = match.end()
    text.append(snippet[at:])
    return text


def hits(found: list[SearchHit]) -> None:
    out = console()
    if not found:
        out.print("no messages found")
        return
    for hit in found:
        head = Text()
        head.append(hit.session_title or "(untitled)", style="bold")
        head.append(f"  {hit.session_source} · {hit.role} · {ago(hit.timestamp)}", style="dim")
        if hit.compacted:
            head.append("  [compacted]", style="dim italic")
        head.append(f"  {hit.session_id} #{hit.message_id}", style="dim")
        out.print(head)
        body = highlighted(" ".join(hit.snippet.split()))
        body.pad_left(2)
        out.print(body)
        out.print()


def stats(s: StoreStats) -> None:
    table = Table(show_header=False, show_edge=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = [
        ("store", s.location),
        ("sessions", f"{s.sessions:,}"),
        ("  pinned / archived / hidden", f"{s.pinned:,} / {s.archived:,} / {s.hidden:,}"),
        ("messages", f"{s.messages:,}"),
        ("  compacted / rewound", f"{s.compacted_messages:,} / {s.rewound_messages:,}"),
        ("model calls", f"{s.usage_calls:,} (${s.cost_usd:,.2f})"),
        ("size on disk", f"{size(s.size_bytes)} (WAL {size(s.wal_bytes)})"),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console().print(table)


def usage(report: Any) -> None:
    """A session's Usage or a profile's ProfileUsage: by model, and by day when it has days."""
    out = console()
    totals = getattr(report, "totals", report)
    if not totals.calls:
        out.print("no model calls recorded")
        return
    rows = getattr(report, "models", None) or report.rows
    table = Table(show_edge=False, pad_edge=False)
    figures = [[f"{row.calls:,}", f"{row.input_tokens:,}", f"{row.output_tokens:,}", f"${row.cost_usd:,.4f}"]
               for row in [*rows, totals]]
    widths = [max(len(name), *(len(f[i]) for f in figures)) for i, name in enumerate(("calls", "input", "output",
                                                                                      "cost"))]
    model, provider = room([40, SHORT_TEXT], widths)
    table.add_column("model", overflow="ellipsis", no_wrap=True, max_width=model)
    table.add_column("provider", overflow="ellipsis", no_wrap=True, max_width=provider)
    for name in ("calls", "input", "output", "cost"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(Text(row.model), Text(row.provider), f"{row.calls:,}", f"{row.input_tokens:,}",
                      f"{row.output_tokens:,}", f"${row.cost_usd:,.4f}")
    table.add_row("total", "", f"{totals.calls:,}", f"{totals.input_tokens:,}", f"{totals.output_tokens:,}",
                  f"${totals.cost_usd:,.4f}", style="bold")
    out.print(table)
    for day in getattr(report, "days", []):
        out.print(f"{day.day}  {day.input_tokens + day.output_tokens:>12,} tokens  ${day.cost_usd:,.4f}")


def size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
