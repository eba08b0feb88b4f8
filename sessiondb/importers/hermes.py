"""Hermes Agent's `state.db`, as it keeps it: `~/.hermes/state.db` and every profile's
`~/.hermes/profiles/<name>/state.db`.

A `sessions` row per conversation (its source platform, user and chat, model, cwd and git
facts, title, parent, running token counters) and a `messages` row per message (role,
content, tool calls as JSON, tool_call_id, tool name, reasoning, and whether it is still
active or was compacted). Per-model usage, where the table exists, is in
`session_model_usage`. Messages have no ids of their own beyond a rowid that a rewrite
of the session changes, so a message's identity is a fingerprint of its session, its
position and what it says.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import apsw

from . import databases
from .core import (
    Conversation, Entry, Event, Malformed, Totals, TooDeep, cost, count, fingerprint, json_value, label, session_id,
)

NAME = "hermes"
ROLES = ("system", "user", "assistant", "tool")


def default_path(home: Path) -> Path:
    return home / ".hermes"


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    found = [root] if root.is_file() else [root / "state.db", *sorted(root.glob("profiles/*/state.db"))]
    return databases.follow([p for p in found if p.is_file()], cursor, _read)


def _profile(path: Path) -> str:
    return path.parent.name if path.parent.parent.name == "profiles" else "default"


def _read(path: Path, conn: apsw.Connection, state: dict[str, Any]) -> Iterator[Event]:
    profile = _profile(path)
    per_model = "session_model_usage" in databases.tables(conn)
    sessions, messages = databases.fields(conn, "sessions"), databases.fields(conn, "messages")
    for original in databases.changed(conn, "messages", "session_id", state):
        row = next(databases.rows(conn, f"SELECT {sessions} FROM sessions WHERE id = ?", (original,)), {})
        left_out = databases.oversize(path, "sessions", row, "the session is read without it")
        if left_out is not None:
            yield left_out
        conv = _conversation(profile, original, row, conn)
        for position, m in enumerate(databases.rows(
                conn, f"SELECT {messages} FROM messages WHERE session_id = ? ORDER BY id", (original,))):
            skipped = databases.oversize(path, "messages", m)
            if skipped is not None:
                yield skipped
                continue
            if m.get("role") not in ROLES:
                continue
            try:
                calls = json_value(m.get("tool_calls"))
            except TooDeep as exc:
                yield Malformed(str(path), m["_row"], f"messages row {m['_row']}: tool_calls not read: {exc}")
                continue
            message = {"role": m["role"], "content": m.get("content"), "tool_calls": calls if isinstance(calls, list) and calls else None,
                       "tool_call_id": m.get("tool_call_id"), "tool_name": m.get("tool_name"),
                       "reasoning": m.get("reasoning") or None, "finish_reason": label(m.get("finish_reason")),
                       "token_count": count(m.get("token_count")) or None, "timestamp": m.get("timestamp"),
                       "state": "compacted" if m.get("compacted") else ("rewound" if m.get("active") == 0 else "active")}
            message["uid"] = fingerprint(conv.id, position, m["role"], m.get("content"), m.get("tool_calls"),
                                         m.get("tool_call_id"))
            yield Entry(conv, message, (str(path), m['_row']))
        yield from _totals(path, conn, conv, original, row, per_model)


def _conversation(profile: str, original: str, row: dict[str, Any], conn: apsw.Connection) -> Conversation:
    def sid(value: str) -> str:
        return session_id(NAME, value if profile == "default" else f"{profile}-{value}")

    metadata = {"tool": NAME, "profile": profile, "original_id": original, "platform": row.get("source"),
                "project": row.get("git_repo_root") or row.get("cwd"), "cwd": row.get("cwd"),
                "git_branch": row.get("git_branch"), "user_id": row.get("user_id"), "chat_id": row.get("chat_id"),
                "title": row.get("title"), "end_reason": row.get("end_reason"), "model": row.get("model")}
    parent, relation = row.get("parent_session_id"), None
    if parent:
        metadata["parent_original_id"] = parent
        # A child of a compaction continues its parent; any other child was delegated to
        # (compared in SQL: the parent's end_reason, whatever its size, is not loaded here).
        ended = conn.execute("SELECT end_reason IS 'compression' FROM sessions WHERE id = ?", (parent,)).fetchone()
        relation = "continuation" if ended and ended[0] else "delegation"
    return Conversation(sid(original), NAME, metadata, title=row.get("title"), model=row.get("model"),
                        parent_id=sid(parent) if parent else None, parent_relation=relation)


def _totals(path, conn, conv, original, row, per_model) -> Iterator[Event]:
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    if per_model:
        select = databases.fields(conn, "session_model_usage")
        for u in databases.rows(conn, f"SELECT {select} FROM session_model_usage WHERE session_id = ?", (original,)):
            skipped = databases.oversize(path, "session_model_usage", u)
            if skipped is not None:
                yield skipped
                continue
            usage = {k: count(u.get(k)) for k in fields} | {
                "model": u.get("model"), "provider": u.get("billing_provider") or "",
                "cost_usd": cost(u.get("actual_cost_usd") or u.get("estimated_cost_usd"))}
            yield Totals(conv, usage, counter=f"{u.get('model')}|{u.get('billing_provider')}|{u.get('task')}",
                         where=(str(path), u["_row"]))
    elif row:
        usage = {k: count(row.get(k)) for k in fields} | {
            "model": row.get("model") or "unknown", "provider": row.get("billing_provider") or "",
            "cost_usd": cost(row.get("actual_cost_usd") or row.get("estimated_cost_usd"))}
        yield Totals(conv, usage, where=(str(path), row["_row"]))
