"""Export files: the lossless JSONL lines and Markdown for reading, from export records.

Pure functions of the records `Store.export()` yields; the CLI and the HTTP service both
stream them.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator

from .model import content_text, json_text, shown


def when(ts: float | None) -> str:
    return "" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def call_summary(call: Any) -> str:
    if isinstance(call, dict):
        fn = call.get("function") if isinstance(call.get("function"), dict) else call
        name = fn.get("name", "?")
        args = fn.get("arguments", "")
        args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return f"{name}({args[:200]})"
    return str(call)[:200]


def jsonl(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json_text(record, separators=(",", ":"), allow_nan=False) + "\n"


def markdown(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """An export stream as Markdown for reading (rewound messages counted, not shown; half
    a character shown as its escape, model.shown)."""
    return map(shown, _markdown(records))


def _markdown(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    rewound = 0
    for record in records:
        kind = record.get("type")
        if kind == "header":
            stamp = datetime.fromtimestamp(record["exported_at"], timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
            yield f"# sessiondb export\n\n_Exported {stamp} from profile {record.get('profile') or 'main'}._\n"
        elif kind == "session":
            s = record["session"]
            rewound = 0
            yield f"\n## {s.get('title') or 'Untitled session'}\n\n"
            yield f"- id: `{s['id']}`\n- source: {s['source']}\n- started: {when(s['started_at'])}\n"
            if s.get("parent_session_id"):
                yield f"- continues: `{s['parent_session_id']}`\n"
            if s.get("ended_at"):
                yield f"- ended: {when(s['ended_at'])} ({s.get('end_reason')})\n"
        elif kind == "message":
            m = record["message"]
            if m["state"] == "rewound":
                rewound += 1
                continue
            yield "\n" + _markdown_message(m)
        elif kind == "usage":
            u = record["usage"]
            yield (f"\n_Usage: {u['model']} — {u['input_tokens']:,} in, {u['output_tokens']:,} out, "
                   f"{u['calls']:,} calls, ${u['cost_usd']:.4f}._\n")
        elif kind == "end" and rewound:
            yield f"\n_{rewound} rewound message(s) not shown._\n"


def _markdown_message(m: dict[str, Any]) -> str:
    parts = m.get("parts")
    content = m.get("content")
    text = content if content is not None else content_text(parts if isinstance(parts, list) else None)
    head = f"### {m['role']}" + (f" ({m['tool_name']})" if m.get("tool_name") else "")
    head += f" · {when(m['timestamp'])}" + (" · compacted" if m["state"] == "compacted" else "")
    if m["role"] == "tool":
        fence = "`" * max(3, _longest_backtick_run(text) + 1)
        body = f"{fence}\n{text}\n{fence}\n"
    else:
        body = f"{text}\n" if text else ""
    calls = "".join(f"- → `{call_summary(c)}`\n" for c in (m.get("tool_calls") or []))
    return f"{head}\n\n{body}{calls}"


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
