"""Codex's rollouts, as it writes them: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Each line is `{"timestamp", "type", "payload"}`: `session_meta` first (the session's id,
cwd, git facts, originator), `turn_context` before each turn (cwd, model), `response_item`
for what was said and done (messages, function and custom tool calls and their outputs,
reasoning: the Responses format, see responses.py), `event_msg` for UI events (of which
only `token_count` is kept: the session's running token totals) and `compacted` for a
compaction: its summary, or (a compaction by the server, whose summary is empty) the
history the conversation continues from, `replacement_history`. Earlier releases wrote
the meta as a bare first line and the items without an envelope; both are read. `$CODEX_HOME` moves the default location.

Rollout items carry no ids, so a message's identity is a fingerprint of its session, its
line and what it says; rollout files are only ever appended to.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import responses
from .core import Conversation, Entry, Event, Totals, count, fingerprint, session_id, timestamp
from .files import files_under, follow

NAME = "codex"
PATTERNS = ("**/rollout-*.jsonl",)
_CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


def default_path(home: Path) -> Path:
    codex_home = os.environ.get("CODEX_HOME")
    return (Path(codex_home) if codex_home else home / ".codex") / "sessions"


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    return follow(files_under(root, PATTERNS), cursor, parse, final=final)


def parse(path: Path, records: Iterable[tuple[int, dict[str, Any]]], state: dict[str, Any]) -> Iterator[Event]:
    names: dict[str, str] = {}
    for line, rec in records:
        kind, payload = rec.get("type"), rec.get("payload")
        if not isinstance(payload, dict):  # the envelope-less lines of earlier releases
            kind, payload = ("session_meta", rec) if "id" in rec and "instructions" in rec else ("response_item", rec)
        stamp = timestamp(rec.get("timestamp") or payload.get("timestamp"))
        if kind == "session_meta":
            state["meta"] = {k: payload.get(k) for k in ("id", "cwd", "originator", "cli_version", "source")}
            git = payload.get("git") if isinstance(payload.get("git"), dict) else {}
            state["meta"] |= {"git_branch": git.get("branch"), "git_repo": git.get("repository_url"), "started_at": stamp}
            yield _conversation(path, state)
        elif kind == "turn_context":
            state["model"] = payload.get("model") or state.get("model")
            state["cwd"] = payload.get("cwd") or state.get("cwd")
            yield _conversation(path, state)
        elif kind == "response_item":
            conv = _conversation(path, state)
            message = responses.message(payload, names)
            if message is None:
                continue
            if message["role"] == "user" and str(message.get("content") or "").lstrip().startswith(_CONTEXT):
                message["display_kind"] = "context"
            message |= {"uid": fingerprint(conv.id, line, message), "timestamp": stamp}
            yield Entry(conv, message, (str(path), line))
        elif kind == "compacted":
            content = _compacted(payload)
            if content:
                conv = _conversation(path, state)
                yield Entry(conv, {"uid": fingerprint(conv.id, line, "compacted"), "role": "system",
                                   "content": content, "display_kind": "compaction_summary",
                                   "timestamp": stamp}, (str(path), line))
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
            total = info.get("total_token_usage")
            if isinstance(total, dict):
                cached = count(total.get("cached_input_tokens"))
                yield Totals(_conversation(path, state), {
                    "model": state.get("model") or "unknown", "provider": "openai",
                    "input_tokens": max(0, count(total.get("input_tokens")) - cached), "cache_read_tokens": cached,
                    "output_tokens": count(total.get("output_tokens")),
                    "reasoning_tokens": count(total.get("reasoning_output_tokens"))}, where=(str(path), line))


def _compacted(payload: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    """What a compaction left the conversation with: its summary (`message`, written by a
    compaction Codex ran itself) or, when the server compacted and `message` is empty, the
    `replacement_history` Codex resumes from, kept whole: one part per item, with the
    item's readable text (what search and the transcript show) beside the item as written
    (an encrypted summary has no readable text but is kept)."""
    summary = payload.get("message")
    if isinstance(summary, str) and summary.strip():
        return summary
    history = payload.get("replacement_history")
    if not isinstance(history, list):
        return None
    parts = []
    for item in history:
        if not isinstance(item, dict):
            continue
        said = responses.message(item, {})
        text = said.get("content") or said.get("reasoning") if said else None
        part: dict[str, Any] = {"type": "replacement_item", "item": item}
        if text:
            part["text"] = f"{said['role']}: {text}"
        parts.append(part)
    return parts or None


def _conversation(path: Path, state: dict[str, Any]) -> Conversation:
    meta = state.get("meta") or {}
    original = meta.get("id") or path.stem.removeprefix("rollout-")
    cwd = state.get("cwd") or meta.get("cwd")
    metadata = {"tool": NAME, "original_id": original, "project": cwd, "cwd": cwd,
                "git_branch": meta.get("git_branch"), "git_repo": meta.get("git_repo"),
                "originator": meta.get("originator"), "version": meta.get("cli_version"), "model": state.get("model")}
    return Conversation(session_id(NAME, original), NAME, metadata, model=state.get("model"),
                        started_at=meta.get("started_at"))
