"""One process of the ADK adapter's concurrency test: several runs at once on one session.

    python adk_worker.py LOCATION OPTIONS_JSON SESSION_ID NAME RUNS

Each run asks for the weather of its own city ("<NAME>city<i>") through the SDK's Runner;
the process prints, as JSON, the ids of the events every run was acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import sys

import adk_agent

from sessiondb.adapters.adk import SessiondbSessionService


async def main(location: str, options: dict, session_id: str, name: str, runs: int) -> None:
    async with SessiondbSessionService(location, check_stale=False, **options) as service:
        run = adk_agent.runner(service)
        turns = await asyncio.gather(*(adk_agent.ask(run, "ana", session_id, f"Weather in {name}city{i}?")
                                       for i in range(runs)))
    print(json.dumps([e.id for events in turns for e in events]))


if __name__ == "__main__":
    location, options, session_id, name, runs = sys.argv[1:]
    asyncio.run(main(location, json.loads(options), session_id, name, int(runs)))
