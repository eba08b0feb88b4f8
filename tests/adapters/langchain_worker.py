"""One process of the LangChain adapter's two-writer test: turns added to one session.

    python langchain_worker.py LOCATION OPTIONS SESSION_ID NAME TURNS

(OPTIONS: open_store's keyword arguments as JSON, a PostgreSQL store's schema.)

Once its history is open it prints "ready" and waits for a line on stdin, so the test
starts both processes' writes together; then it adds TURNS turns as
RunnableWithMessageHistory adds them, one `add_messages` per turn: the question without
an id, the answer with the id a model gives it.
"""

from __future__ import annotations

import json
import sys

from langchain_core.messages import AIMessage, HumanMessage

from sessiondb.adapters.langchain import SessiondbChatMessageHistory


def main(location: str, options: dict, session_id: str, name: str, turns: int) -> None:
    with SessiondbChatMessageHistory(session_id, location, **options) as history:
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range(turns):
            history.add_messages([HumanMessage(f"{name} asks {i}"), AIMessage(f"{name} hears {i}", id=f"{name}-{i}")])


if __name__ == "__main__":
    location, options, session_id, name, turns = sys.argv[1:]
    main(location, json.loads(options), session_id, name, int(turns))
