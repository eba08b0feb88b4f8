"""The environment of docs/adapters/openai-agents.md's example: a scripted model on this machine.

The example builds its agents on the SDK's default OpenAI model as a reader would; the
OpenAI client sends its requests to $OPENAI_BASE_URL, here a local HTTP server that
answers the Responses API from a script: an agent told to summarise gets a summary, any
other request is answered from the conversation it was sent (the first thing the user
said, once there is history), so the example shows what its session remembered.
Nothing leaves the machine; the SDK's trace export is turned off.
"""

from __future__ import annotations

import contextlib
import itertools

from scripted import serving

_RESPONSES = itertools.count(1)


def _reply(request: dict) -> str:
    said = [item["content"] if isinstance(item["content"], str) else item["content"][0]["text"]
            for item in request["input"] if item.get("role") == "user"]
    if "summarise" in (request.get("instructions") or "").lower():
        return f"The user reported: {said[0]}"
    return f"You first told me: {said[0]}" if len(said) > 1 else "I am sorry to hear that; I will look into it."


def _answer(request: dict) -> dict:
    n = next(_RESPONSES)
    return {
        "id": f"resp_{n}", "object": "response", "created_at": 1_900_000_000, "model": request["model"],
        "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
        "output": [{"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": _reply(request), "annotations": []}]}],
        "usage": {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52,
                  "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
    }


@contextlib.contextmanager
def environment(tmp_path):
    with serving(_answer) as port:
        yield {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
            "OPENAI_API_KEY": "scripted-model-needs-no-key",
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
        }
