"""A compacting or checkpointing process for the reliability tests (run as a script).

    python maintenance_worker.py STORE_PATH NAME compact|checkpoint SESSION_ID[,SESSION_ID...]

`compact` loops over the sessions: take a compaction lease, publish a one-message summary
with uid NAME-sum-N, and print `ack NAME-sum-N` (flushed) once it is acknowledged.
`checkpoint` loops `optimize(force=True)` (index merge, statistics, WAL checkpoint) and
prints `ack checkpoint-N`. Both run until killed; refusals (a lease held by a process not
yet provably dead, a busy store) are printed as `refused ...` and retried.
"""

from __future__ import annotations

import sys
import time

import sessiondb


def main(argv: list[str]) -> int:
    path, name, role, session_ids = argv[1], argv[2], argv[3], argv[4].split(",")
    n = 0
    with sessiondb.open_store(path, durability="full", patience=60) as store:
        print("ready", flush=True)
        while True:
            try:
                if role == "compact":
                    sid = session_ids[n % len(session_ids)]
                    lease = store.begin_compaction(sid, holder=name, ttl=30)
                    uid = f"{name}-sum-{n}"
                    store.commit_compaction(lease, [{"uid": uid, "role": "assistant", "content": f"summary {uid}"}])
                    print(f"ack {uid}", flush=True)
                else:
                    store.optimize(force=True)
                    print(f"ack checkpoint-{n}", flush=True)
            except sessiondb.SessionDBError as exc:
                print(f"refused {type(exc).__name__}: {exc}", flush=True)
                time.sleep(0.01)
            n += 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
