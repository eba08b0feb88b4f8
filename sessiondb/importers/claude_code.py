"""Claude Code's transcripts, as it writes them: `~/.claude/projects/<project>/<session>.jsonl`.

Each line is one event of a session: `user` and `assistant` lines carry `uuid`,
`parentUuid`, `sessionId`, `timestamp`, `cwd`, `gitBranch` and the API `message` (role,
content blocks, model, usage); `system` lines mark a compaction (`compact_boundary`),
after which a user line with `isCompactSummary` holds the summary; `summary` lines give a
title, and a `custom-title` line (`/rename`) the title a person chose, which wins. A
response's `thinking` blocks are kept as its reasoning; tools the API's server runs
(`server_tool_use`: web search, web fetch, code execution) are tool calls like the
others, answered by the `*_tool_result` blocks of the same response. A subagent's lines
(`isSidechain`, `agentId`, in `<session>/subagents/agent-*.jsonl` or inline) become their
own session, started from the main one.

A model response is written as several lines (one per content block) that repeat the
same `message.id` and usage: the usage is taken from the first of them only, and the last
id seen is kept in the cursor so a later pass does not count it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from .core import (
    Conversation, Entry, Event, Malformed, count, fingerprint, label, session_id, text_of, timestamp, tool_call, uid,
)
from .files import files_under, follow

NAME = "claude-code"
#: The lines that title a session, and the field holding the title: the name a person
#: gave it (`/rename`) beats a summary, whichever was written last (_title).
_TITLES = {"custom-title": "customTitle", "summary": "summary"}
#: Under the projects directory, or under one project's directory.
PATTERNS = ("*/*.jsonl", "*/*/subagents/*.jsonl", "*.jsonl", "*/subagents/*.jsonl")


def default_path(home: Path) -> Path:
    return home / ".claude" / "projects"


def read(root: Path, cursor: dict[str, Any], *, final: bool) -> Iterator[Event]:
    return follow(files_under(root, PATTERNS), cursor, parse, final=final)


def parse(path: Path, records: Iterable[tuple[int, dict[str, Any]]], state: dict[str, Any]) -> Iterator[Event]:
    names: dict[str, str] = {}  # tool_use id -> tool name, to name the results
    for line, rec in records:
        kind = rec.get("type")
        where = (str(path), line)
        if kind in _TITLES and isinstance(rec.get(_TITLES[kind]), str):
            state[kind] = rec[_TITLES[kind]].strip()[:100] or None
            if state.get("main"):
                yield _conversation(path, state["main"], state)
            continue
        if kind not in ("user", "assistant", "system"):
            continue  # snapshots, queue operations and other bookkeeping
        conv = _conversation(path, rec, state)
        if not rec.get("isSidechain"):
            state["main"] = {k: rec.get(k) for k in ("sessionId", "cwd", "gitBranch", "version")}
        stamp = timestamp(rec.get("timestamp"))
        if kind == "system":
            text = rec.get("content")
            if isinstance(text, str) and text:
                yield Entry(conv, {"uid": uid(rec.get("uuid"), conv.id, line), "role": "system", "content": text,
                                   "timestamp": stamp, "display_kind": label(rec.get("subtype"))}, where)
            continue
        message = rec.get("message")
        if not isinstance(message, dict):
            yield Malformed(str(path), line, f"a {kind} line without its message")
            continue
        if kind == "user":
            yield from _user(conv, rec, message, stamp, where, names)
        else:
            yield from _assistant(conv, rec, message, stamp, where, names, state)


def _conversation(path: Path, rec: dict[str, Any], state: dict[str, Any]) -> Conversation:
    original = rec.get("sessionId") or path.stem
    main = session_id(NAME, original)
    metadata = {"tool": NAME, "original_id": original, "project": rec.get("cwd") or path.parent.name,
                "cwd": rec.get("cwd"), "git_branch": rec.get("gitBranch"), "version": rec.get("version")}
    agent = rec.get("agentId")
    if rec.get("isSidechain"):
        agent = agent or "sidechain"
        metadata |= {"sidechain": True, "agent_id": agent}
        return Conversation(session_id(NAME, f"{original}-agent-{agent}"), NAME, metadata, model=None,
                            parent_id=main, parent_relation="delegation")
    title = state.get("custom-title") or state.get("summary")
    metadata["title"] = title
    return Conversation(main, NAME, metadata, title=title)


def _user(conv, rec, message, stamp, where, names) -> Iterator[Entry]:
    content = message.get("content")
    base = uid(rec.get("uuid"), conv.id, where)
    blocks = content if isinstance(content, list) else [content]
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    for i, block in enumerate(results):
        call_id = block.get("tool_use_id")
        yield Entry(conv, {"uid": f"{base}-r{i}", "role": "tool", "content": text_of(block.get("content")),
                           "tool_call_id": call_id, "tool_name": names.get(str(call_id)),
                           "finish_reason": "error" if block.get("is_error") else None, "timestamp": stamp}, where)
    text = text_of([b for b in blocks if b not in results])
    if text:
        kind = "compaction_summary" if rec.get("isCompactSummary") else ("meta" if rec.get("isMeta") else None)
        yield Entry(conv, {"uid": base, "role": "user", "content": text, "timestamp": stamp,
                           "display_kind": kind}, where)


def _assistant(conv, rec, message, stamp, where, names, state) -> Iterator[Entry]:
    """The response (its text, thinking and tool calls), then the results of the tools the
    API's server ran for it (web search, web fetch, code execution), which it writes in
    the response itself rather than in a user line."""
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    calls, thinking, results, said = [], [], [], []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in ("tool_use", "server_tool_use"):
            names[str(block.get("id"))] = str(block.get("name"))
            calls.append(tool_call(block.get("id"), block.get("name"), block.get("input")))
        elif kind == "thinking":
            thinking.append(str(block.get("thinking") or ""))
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            results.append(block)
        else:
            said.append(block)
    text = text_of(said)
    reasoning = "\n".join(t for t in thinking if t) or None
    base = uid(rec.get("uuid"), conv.id, where, fingerprint(message))
    if text or calls or reasoning:
        yield _response(conv, rec, message, state, where, {
            "uid": base, "role": "assistant", "content": text or None, "tool_calls": calls or None,
            "reasoning": reasoning, "finish_reason": label(message.get("stop_reason")), "timestamp": stamp})
    for i, block in enumerate(results):
        call_id = block.get("tool_use_id")
        failed = isinstance(block.get("content"), dict) and "error_code" in block["content"]
        yield Entry(conv, {"uid": f"{base}-r{i}", "role": "tool", "content": _server_result(block.get("content")),
                           "tool_call_id": call_id, "tool_name": names.get(str(call_id)),
                           "finish_reason": "error" if failed else None, "timestamp": stamp}, where)


def _server_result(content: Any) -> str:
    """A server tool's result as text: each page's title and address, a program's output,
    an error's code, or the text it holds."""
    if isinstance(content, dict) and "error_code" in content:
        return f"error: {content['error_code']}"
    items = content if isinstance(content, list) else [content]
    lines = []
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            lines.append(" — ".join(str(v) for v in (item.get("title"), item["url"]) if v))
        elif isinstance(item, dict) and (item.get("stdout") or item.get("stderr")):  # code execution
            lines.append("\n".join(str(item[k]) for k in ("stdout", "stderr") if item.get(k)))
        else:
            lines.append(text_of(item) or ("" if item is None else json.dumps(item, ensure_ascii=False)))
    return "\n".join(line for line in lines if line)


def _response(conv, rec, message, state, where, out) -> Entry:
    """The response's entry, with its usage when this is the first line of the response."""
    usage = None
    response = message.get("id") or rec.get("requestId")
    if response != state.get("last_response") and isinstance(message.get("usage"), dict):
        state["last_response"] = response
        u, model = message["usage"], message.get("model")
        if isinstance(model, str) and not model.startswith("<"):  # "<synthetic>": no model was called
            usage = {"model": model, "provider": "anthropic", "input_tokens": count(u.get("input_tokens")),
                     "output_tokens": count(u.get("output_tokens")),
                     "cache_read_tokens": count(u.get("cache_read_input_tokens")),
                     "cache_write_tokens": count(u.get("cache_creation_input_tokens"))}
    return Entry(conv, out, where, usage)
