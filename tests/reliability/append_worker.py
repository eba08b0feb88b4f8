"""A writer process for the reliability tests (run as a script, not collected by pytest).

    python append_worker.py STORE_PATH WRITER_NAME COUNT SESSION_ID[,SESSION_ID...] [--gate]
                            [--batch N] [--from K]

With --gate it opens the store, prints `ready` and waits for a line on stdin before
writing, so the parent can start every writer at once. Appends messages with uids
WRITER_NAME-K .. WRITER_NAME-(COUNT-1) (K is 0 unless --from says), N to a batch (one
append each, 1 unless --batch says), batch b of the writer to session b modulo the number
of sessions, at durability "full", and prints `ack <uid>` (flushed) for each message of a
batch once the batch is acknowledged, so the parent knows exactly what this process was
promised. A writer restarted with --from at the first batch it saw no whole
acknowledgement for sends that batch again with the same uids, as an agent retrying does.
"""

from __future__ import annotations

import sys

import sessiondb


def option(args: list[str], name: str, default: int) -> int:
    return int(args[args.index(name) + 1]) if name in args else default


def main(argv: list[str]) -> int:
    path, writer, count, session_ids = argv[1], argv[2], int(argv[3]), argv[4].split(",")
    batch, start = option(argv[5:], "--batch", 1), option(argv[5:], "--from", 0)
    assert start % batch == 0, "--from names the first message of a batch"
    with sessiondb.open_store(path, durability="full", patience=60) as store:
        if "--gate" in argv[5:]:
            print("ready", flush=True)
            sys.stdin.readline()
        for first in range(start, count, batch):
            uids = [f"{writer}-{i}" for i in range(first, min(first + batch, count))]
            store.append(session_ids[first // batch % len(session_ids)],
                         [{"uid": uid, "role": "user", "content": uid} for uid in uids])
            for uid in uids:
                print(f"ack {uid}", flush=True)
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
