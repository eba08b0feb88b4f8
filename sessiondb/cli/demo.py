"""`sessiondb demo`: write a few realistic sessions into the `demo` profile and print them."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from .context import CliContext

DEMO_PROFILE = "demo"

CONVERSATIONS = [
    ("telegram", "Trip to Kyoto", [
        ("user", "Plan three days in Kyoto in April, mostly temples and food."),
        ("assistant", "Day 1: Fushimi Inari at dawn, then Nishiki Market for lunch..."),
        ("user", "Swap day 2 for something quieter, please."),
        ("assistant", "Day 2: Ohara village, Sanzen-in and Hosen-in, back for dinner in Pontocho."),
    ]),
    ("cli", "Fix the flaky upload test", [
        ("user", "tests/test_upload.py fails one run in ten. Why?"),
        ("assistant", "It races the background thread that finalises the temp file. Let me read it."),
        ("tool", "def finalise(path):\n    os.replace(tmp, path)  # runs after the assertion"),
        ("assistant", "Wait on the finaliser before asserting; I've made that change."),
    ]),
    ("desktop", "東京の天気", [
        ("user", "明日の東京の天気は？"),
        ("assistant", "明日の東京は晴れ、最高気温は18度の予報です。"),
    ]),
]


@click.command()
@click.pass_obj
def demo(ctx: CliContext) -> None:
    """Write a few realistic sessions into the `demo` profile and print them.

    Safe to run again: every message has a stable uid, so nothing is duplicated.
    """
    with ctx.open(profile=DEMO_PROFILE, create=True) as store:
        for source, title, turns in CONVERSATIONS:
            existing = [s for s in store.list_sessions(source=source, limit=100).items if s.title == title]
            session = existing[0] if existing else store.create_session(source, title=title)
            store.append(session.id, [
                {"uid": f"demo-{i}", "role": role, "content": text,
                 **({"tool_name": "read_file"} if role == "tool" else {})}
                for i, (role, text) in enumerate(turns)
            ])
        console = Console()
        table = Table(title=f"sessiondb demo: {store.location}")
        for column in ("title", "source", "messages", "id"):
            table.add_column(column)
        sessions = store.list_sessions().items
        for s in sessions:
            table.add_row(s.title or "", s.source, str(s.message_count), s.id)
        console.print(table)
        for s in sessions:
            console.rule(f"[bold]{s.title}[/bold]")
            for m in store.transcript(s.id):
                console.print(f"[bold]{m.role:>9}[/bold]  {m.text}", highlight=False)
