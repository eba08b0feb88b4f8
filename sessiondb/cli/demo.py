"""`sessiondb demo`: write a few realistic sessions into the `demo` profile and print them.

The data is what the README's examples search for and what the dashboard shows: English
and Japanese text, a tool output, Markdown with code and a table, conversations spread
over the past week, and model usage. Running it again stores nothing twice: every message
has a stable uid, and usage is recorded only when a session is first written.
"""

from __future__ import annotations

import time

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .context import CliContext

DEMO_PROFILE = "demo"
DAY = 86400

# (source, title, days ago, turns, usage: (model, provider, input, output, cost in USD))
CONVERSATIONS = [
    ("telegram", "Trip to Kyoto", 6, [
        ("user", "Plan three days in Kyoto in April, mostly temples and food."),
        ("assistant", "Day 1 in Kyoto: Fushimi Inari at dawn, then Nishiki Market for lunch..."),
        ("user", "Swap day 2 for something quieter, please."),
        ("assistant", "Day 2: Ohara village, Sanzen-in and Hosen-in, back for dinner in Pontocho."),
    ], [("claude-sonnet-4", "anthropic", 1840, 620, 0.0148)]),
    ("cli", "Fix the flaky upload test", 2, [
        ("user", "The upload test is flaky: tests/test_upload.py fails one run in ten. Why?"),
        ("assistant", "It races the background thread that finalises the temp file. Let me read it."),
        ("tool", "def finalise(path):\n    os.replace(tmp, path)  # runs after the assertion"),
        ("assistant", "Wait on the finaliser before asserting:\n\n```python\nupload.finalised.wait(timeout=5)\n"
                      "assert path.exists()\n```\n\nI've made that change; the test passed 200 runs in a row."),
    ], [("gpt-5", "openai", 9200, 1350, 0.0251), ("claude-haiku-4", "anthropic", 2100, 240, 0.0031)]),
    ("desktop", "Release checklist", 1, [
        ("user", "What is left before the 0.2 release?"),
        ("assistant", "## Before tagging\n\n| step | owner | state |\n|---|---|---|\n| changelog | Ana | done |\n"
                      "| wheels | CI | running |\n| docs | Kenji | **to do** |\n\nThe full list is in the "
                      "[release guide](https://example.com/release)."),
    ], [("gpt-5", "openai", 3100, 410, 0.0081)]),
    ("desktop", "東京の天気", 0, [
        ("user", "明日の東京の天気は？"),
        ("assistant", "明日の東京は晴れ、最高気温は18度の予報です。"),
    ], [("claude-haiku-4", "anthropic", 420, 80, 0.0006)]),
]


@click.command()
@click.pass_obj
def demo(ctx: CliContext) -> None:
    """Write a few realistic sessions into the `demo` profile and print them.

    Safe to run again: every message has a stable uid, so nothing is duplicated.
    """
    now = time.time()
    with ctx.open(profile=DEMO_PROFILE, create=True) as store:
        for source, title, days_ago, turns, usage in CONVERSATIONS:
            existing = [s for s in store.list_sessions(source=source, limit=100).items if s.title == title]
            session = existing[0] if existing else store.create_session(source, title=title)
            store.append(session.id, [
                {"uid": f"demo-{i}", "role": role, "content": text, "timestamp": now - days_ago * DAY + i * 60,
                 **({"tool_name": "read_file"} if role == "tool" else {})}
                for i, (role, text) in enumerate(turns)
            ])
            if not existing:  # usage adds up: record it once
                for model, provider, tokens_in, tokens_out, cost in usage:
                    store.record_usage(session.id, model=model, provider=provider, input_tokens=tokens_in,
                                       output_tokens=tokens_out, cost_usd=cost)
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
                line = Text(f"{m.role:>9}", style="bold")
                line.append(f"  {m.text}")  # text, never rich markup
                console.print(line, highlight=False)
