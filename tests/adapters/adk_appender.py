"""One process of the ADK adapter's two-writer test: events appended to one session, in order.

    python adk_appender.py PATH SESSION_ID NAME COUNT

Appends the events NAME-0 .. NAME-(COUNT-1) one after another through
SessiondbSessionService (check_stale=False: another process writes the same session), each
a second time from a copy of the session taken before it (a retry that reaches the store,
which stores nothing), and prints the ids it was acknowledged, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys

from google.adk.events.event import Event
from google.genai import types

from sessiondb.adapters.adk import SessiondbSessionService

APP, USER = "travel", "ana"


async def main(path: str, session_id: str, name: str, count: int) -> None:
    acknowledged = []
    async with SessiondbSessionService(path, check_stale=False) as service:
        session = await service.get_session(app_name=APP, user_id=USER, session_id=session_id)
        for i in range(count):
            event = Event(id=f"{name}-{i}", invocation_id=f"{name}-run", author=name,
                          content=types.Content(role="model", parts=[types.Part(text=f"{name} says {i}")]))
            before = session.model_copy(deep=True)
            acknowledged.append((await service.append_event(session, event)).id)
            await service.append_event(before, event.model_copy(deep=True))
    print(json.dumps(acknowledged))


if __name__ == "__main__":
    path, session_id, name, count = sys.argv[1:]
    asyncio.run(main(path, session_id, name, int(count)))
