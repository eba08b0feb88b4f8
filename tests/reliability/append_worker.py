"""A writer process for the reliability tests (run as a script, not collected by pytest).

    python append_worker.py STORE_PATH WRITER_NAME COUNT SESSION_ID[,SESSION_ID...] [--gate]

With --gate it opens the store, prints `ready` and waits for a line on stdin before
writing, so the parent can start every writer at once. Appends COUNT messages with uids WRITER_NAME-0 .. WRITER_NAME-(COUNT-1), round-robin over
the sessions, at durability "full", and prints `ack <uid>` (flushed) once each append is
acknowledged, so the parent knows exactly what this process was promised.
"""

from __future__ import annotations

import sys

import sessiondb


def main(argv: list[str]) -> int:
    path, writer, count, session_ids = argv[1], argv[2], int(argv[3]), argv[4].split(",")
    with sessiondb.open_store(path, durability="full", patience=60) as store:
        if "--gate" in argv[5:]:
            print("ready", flush=True)
            sys.stdin.readline()
        for i in range(count):
            uid = f"{writer}-{i}"
            store.append(session_ids[i % len(session_ids)], {"uid": uid, "role": "user", "content": uid})
            print(f"ack {uid}", flush=True)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
