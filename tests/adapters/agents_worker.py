"""A scripted model for the Agents SDK's runner, and a worker process that drives runs with it.

`ScriptedModel` is a real `agents.models.interface.Model`: it answers each call with the
next scripted output and records the input the runner gave it. `script(tag)` is one run's
script: a tool call (so function_call and function_call_output items appear), then an
answer. Run as a program, this module runs `runs` conversations at once on one session
(`python agents_worker.py runs LOCATION OPTIONS_JSON SESSION TAG N`) or adds one batch
`N` times at once (`... retry LOCATION OPTIONS_JSON SESSION BATCH_JSON N`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from sessiondb.adapters.openai_agents import SessiondbSession

set_tracing_disabled(True)


class ScriptedModel(Model):
    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = list(outputs)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        self.inputs.append(copy.deepcopy(input))
        return ModelResponse(output=self.outputs.pop(0), response_id=f"resp_{len(self.inputs)}",
                             usage=Usage(requests=1, input_tokens=11, output_tokens=7, total_tokens=18))

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the scripted model does not stream")


def answer(text: str, item_id: str = "__fake_id__") -> ResponseOutputMessage:
    """An assistant message; without an id of its own it carries the SDK's placeholder."""
    return ResponseOutputMessage(id=item_id, type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(type="output_text", text=text, annotations=[])])


def tool_call(tag: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{tag}", call_id=f"call_{tag}", name="lookup", type="function_call",
                                    arguments=json.dumps({"topic": tag}), status="completed")


def script(tag: str) -> list[list[Any]]:
    return [[tool_call(tag)], [answer(f"answer {tag}", f"msg_{tag}")]]


@function_tool
def lookup(topic: str) -> str:
    """Look up notes on a topic."""
    return f"notes on {topic}"


def agent(model: Model) -> Agent:
    return Agent(name="support", instructions="Answer briefly.", model=model, tools=[lookup])


async def _runs(location: str, options: dict[str, Any], session_id: str, tag: str, n: int) -> None:
    async def one(i: int) -> None:
        async with SessiondbSession(session_id, location, **options) as session:
            await Runner.run(agent(ScriptedModel(script(f"{tag}-{i}"))), f"question {tag}-{i}", session=session)

    await asyncio.gather(*(one(i) for i in range(n)))


async def _retry(location: str, options: dict[str, Any], session_id: str, batch: list[Any], n: int) -> None:
    async with SessiondbSession(session_id, location, **options) as session:
        await asyncio.gather(*(session.add_items(copy.deepcopy(batch)) for _ in range(n)))


if __name__ == "__main__":
    mode, location, options, session_id, what, n = sys.argv[1:]
    if mode == "runs":
        asyncio.run(_runs(location, json.loads(options), session_id, what, int(n)))
    else:
        asyncio.run(_retry(location, json.loads(options), session_id, json.loads(what), int(n)))
