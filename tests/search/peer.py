"""The store calls of the two-process search property, and the second process that runs
them (as a script: one JSON command per line in, one JSON reply per line out).

    python peer.py [--unindexed]

`--unindexed` keeps this process's own indexer from running after its writes (as if it had
not got to them yet), so that what indexes them is the other process's, at the moment a
test chooses. `open` opens a store at `path` (closing any previous one), `close` closes it; every other
command is `call` on this process's own handle.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import sessiondb


def call(store, op: str, args: dict):
    """One store call by name, with a JSON-able result."""
    if op in ("search", "recall"):
        return [[h.uid, h.compacted] for h in getattr(store, op)(args["query"], limit=1000)]
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


class Peer:
    """This script running in another process, called like a function: `peer(op, **args)`."""

    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__)), *flags], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def __call__(self, op: str, **args):
        self.proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        assert reply["ok"], reply["error"]
        return reply["result"]

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


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
                if UNINDEXED:
                    unindexed(store)
            elif op == "close":
                store.close()
                store, result = None, None
            else:
                result = call(store, op, args)
            reply = {"ok": True, "result": result}
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails on it
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)


def unindexed(store) -> None:
    """Writes no longer wake the store's index thread: only a search catches the index up."""
    store.backend._file.indexer.wanted.is_set = lambda: True


UNINDEXED = "--unindexed" in sys.argv[1:]

if __name__ == "__main__":
    serve()
