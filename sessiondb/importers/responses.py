"""Items of the OpenAI Responses format as sessiondb messages.

Codex writes its rollout items (`response_item` lines) and the OpenAI Agents SDK keeps
its session items in this one format: messages with text parts, function and custom tool
calls with their outputs (paired by `call_id`), and reasoning summaries. Both importers
share this conversion, and so does the Agents SDK session (adapters/openai_agents.py).
"""

from __future__ import annotations

from typing import Any

from .core import text_of, tool_call

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system", "tool": "tool"}
_CALLS = {"function_call": "arguments", "custom_tool_call": "input", "local_shell_call": "action",
          "web_search_call": "action", "file_search_call": "queries", "computer_call": "action"}
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output")


def message(item: dict[str, Any], names: dict[str, str]) -> dict[str, Any] | None:
    """The message an item stands for (role, content, tool calls...), or None for an item
    that carries nothing to keep. `names` maps call ids to tool names, to name outputs."""
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind == "message":
        role = _ROLES.get(str(item.get("role")))
        if role is None:
            return None
        out: dict[str, Any] = {"role": role, "content": text_of(item.get("content"))}
        if role == "tool":
            out["tool_call_id"] = _text(item.get("tool_call_id") or item.get("call_id"))
        return out
    if kind in _CALLS:
        call_id = _text(item.get("call_id") or item.get("id"))
        name = _text(item.get("name")) or kind.removesuffix("_call")
        if call_id:
            names[call_id] = name
        return {"role": "assistant", "content": None,
                "tool_calls": [tool_call(call_id, name, item.get(_CALLS[kind]))]}
    if kind in _OUTPUTS:
        call_id = _text(item.get("call_id"))
        output = item.get("output")
        if isinstance(output, dict):  # {"output": ..., "metadata": ...} in some writers
            output = output.get("output", output.get("content"))
        return {"role": "tool", "content": text_of(output) if not isinstance(output, str) else output,
                "tool_call_id": call_id, "tool_name": names.get(call_id or "")}
    if kind == "reasoning":
        text = text_of(item.get("summary")) or text_of(item.get("content"))
        return {"role": "assistant", "content": None, "reasoning": text} if text else None
    return None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
