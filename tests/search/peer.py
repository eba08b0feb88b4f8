"""The store calls of the two-process search property, and the second process that runs
them (as a script: one JSON command per line in, one JSON reply per line out).

    python peer.py

`open` opens a store at `path` (closing any previous one), `close` closes it; every other
command is `call` on this process's own handle.
"""

from __future__ import annotations

import json
import sys

import sessiondb


def call(store, op: str, args: dict):
    """One store call by name, with a JSON-able result."""
    if op == "search":
        return [[h.uid, h.compacted] for h in store.search(args["query"], limit=1000)]
    if op == "append":
        store.append(args["session"], args["messages"])
        return None
    if op == "create":
        return store.create_session("cli", session_id=args["session"]).id
    if op == "compact":
        lease = store.begin_compaction(args["session"])
        store.commit_compaction(lease, [{"uid": args["summary"], "role": "assistant", "content": args["content"]}])
        return None
    if op == "rewind":
        return store.rewind(args["session"], args["to"])
    if op == "restore":
        return store.restore_rewound(args["session"])
    if op == "delete":
        store.delete_session(args["session"])
        return None
    if op == "ids":
        return [[m.uid, m.id] for m in store.transcript(args["session"])]
    raise ValueError(op)


def serve() -> None:
    store = None
    for line in sys.stdin:
        request = json.loads(line)
        op, args = request["op"], request.get("args", {})
        try:
            if op == "open":
                if store is not None:
                    store.close()
                store, result = sessiondb.open_store(args["path"]), None
            elif op == "close":
                store.close()
                store, result = None, None
            else:
                result = call(store, op, args)
            reply = {"ok": True, "result": result}
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    serve()
