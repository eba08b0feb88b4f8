"""A compacting process of the PostgreSQL kill test: rotates and compacts in place, in turn.

    python compact_worker.py URL SCHEMA NAME SESSION [SESSION...]

Loops over the conversations (their original ids): takes a compaction lease (at the
conversation's live tip), publishes a one-message summary with uid NAME-sum-N, rotating
on even N and in place on odd N, and prints `ack rotate|in_place NAME-sum-N` (flushed)
once it is acknowledged. Refusals (a lease still held, a lease lost to a restart) are
printed as `refused ...` and the loop goes on. It pauses PAUSE seconds between
compactions, so a conversation's lineage stays within what a walk follows. Runs until killed.
"""

from __future__ import annotations

import sys
import time

import sessiondb

PAUSE = 0.2


def main(argv: list[str]) -> None:
    url, schema, name, *sessions = argv[1:]
    n = 0
    with sessiondb.open_store(url, schema=schema, patience=60, pool_size=2) as store:
        while True:
            mode = "rotate" if n % 2 == 0 else "in_place"
            uid = f"{name}-sum-{n:05d}"
            try:
                lease = store.begin_compaction(sessions[n % len(sessions)], holder=name, ttl=30)
                store.commit_compaction(lease, [{"uid": uid, "role": "assistant", "content": f"summary {uid}"}],
                                        mode=mode)
                print(f"ack {mode} {uid}", flush=True)
            except sessiondb.SessionDBError as exc:
                print(f"refused {type(exc).__name__}: {' '.join(str(exc).split())}", flush=True)
            n += 1
            time.sleep(PAUSE)


if __name__ == "__main__":
    main(sys.argv)
