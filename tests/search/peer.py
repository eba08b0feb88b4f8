"""A second process for the two-process search property (run as a script).

    python peer.py

Reads one JSON command per line and answers with one JSON line. `open PATH` opens a store
(closing any previous one); `close`; and the store calls the property makes, on this
process's own handle: append, search, compact, rewind, restore, delete.
"""

from __future__ import annotations

import json
import sys

import sessiondb

store = None


def call(op: str, args: dict):
    global store
    if op == "open":
        if store is not None:
            store.close()
        store = sessiondb.open_store(args["path"])
        return None
    if op == "close":
        store.close()
        store = None
        return None
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


for line in sys.stdin:
    request = json.loads(line)
    try:
        reply = {"ok": True, "result": call(request["op"], request.get("args", {}))}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
        reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(reply), flush=True)
