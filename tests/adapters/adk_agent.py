"""The agent the ADK adapter's tests run: a scripted model, one tool, the SDK's own Runner.

Shared by tests/adapters/test_adk.py and the worker processes it starts
(tests/adapters/adk_worker.py). Nothing reaches the network: the model is a BaseLlm
subclass that answers from a script and records every request it receives, and no
telemetry is exported (a Runner sets up no exporter; the tests also set
OTEL_SDK_DISABLED, which the workers inherit).
"""

from __future__ import annotations

from typing import Any, AsyncGenerator

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from pydantic import PrivateAttr

APP = "travel"


class ScriptedModel(BaseLlm):
    """Asks the weather tool about the city the user named, then reports what it said."""

    _requests: list[list[types.Content]] = PrivateAttr(default_factory=list)
    #: Called with the number of the request before it is answered (1 for the first).
    on_request: Any = None

    @property
    def requests(self) -> list[list[types.Content]]:
        """The contents of every request received, in order."""
        return self._requests

    async def generate_content_async(self, llm_request: Any, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        self._requests.append([c.model_copy(deep=True) for c in llm_request.contents])
        if self.on_request is not None:
            self.on_request(len(self._requests))
        last = llm_request.contents[-1]
        answered = [p.function_response for p in last.parts if p.function_response]
        if answered:
            reply = types.Part(text=f"The forecast: {answered[0].response['forecast']}.")
        else:
            city = last.parts[0].text.rstrip("?").split()[-1]
            reply = types.Part(function_call=types.FunctionCall(name="weather", args={"city": city}))
        yield LlmResponse(content=types.Content(role="model", parts=[reply]))


def weather(city: str, tool_context: ToolContext) -> dict:
    """The weather forecast of a city; remembers it in every state scope."""
    tool_context.state["last_city"] = city                                    # this session
    tool_context.state[f"user:asked_{city.lower()}"] = True                   # the user's sessions
    tool_context.state["app:cities"] = [*tool_context.state.get("app:cities", []), city]  # the app
    tool_context.state["temp:raw"] = f"raw reading for {city}"                # this invocation only
    return {"forecast": f"sunny in {city}"}


def runner(session_service: Any, memory_service: Any = None, model: ScriptedModel | None = None) -> Runner:
    agent = LlmAgent(name="forecaster", model=model or ScriptedModel(model="scripted"), tools=[weather],
                     instruction="Answer with the forecast.")
    return Runner(app_name=APP, agent=agent, session_service=session_service, memory_service=memory_service)


async def ask(run: Runner, user_id: str, session_id: str, text: str) -> list[Any]:
    """Run one turn and return the events the runner yielded."""
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [e async for e in run.run_async(user_id=user_id, session_id=session_id, new_message=message)]
