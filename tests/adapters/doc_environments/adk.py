"""The environment of docs/adapters/adk.md's example: a scripted Gemini on this machine.

The example builds its agent on a Gemini model as a reader would; the google-genai client
it uses sends its requests to $GOOGLE_GEMINI_BASE_URL, here a local HTTP server that
answers the generateContent API from a script: a question "... <city>?" gets a call of
the `weather` tool, a tool's response gets its forecast back as text. Nothing leaves the
machine, and no telemetry is exported.
"""

from __future__ import annotations

import contextlib

from scripted import serving


def _answer(request: dict) -> dict:
    last = request["contents"][-1]["parts"]
    answered = [p["functionResponse"] for p in last if "functionResponse" in p]
    if answered:
        part = {"text": f"The forecast: {answered[0]['response']['forecast']}."}
    else:
        city = next(p["text"] for p in last if "text" in p).rstrip("?").split()[-1]
        part = {"functionCall": {"name": "weather", "args": {"city": city}}}
    return {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


@contextlib.contextmanager
def environment(tmp_path):
    with serving(_answer) as port:
        yield {
            "GOOGLE_GEMINI_BASE_URL": f"http://127.0.0.1:{port}",
            "GOOGLE_API_KEY": "scripted-model-needs-no-key",
            "GOOGLE_GENAI_USE_VERTEXAI": "false",
            "OTEL_SDK_DISABLED": "true",
        }
