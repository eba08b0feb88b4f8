"""A writer process of the fleet tests: its own store handle (its own pool) on the server.

    python append_worker.py URL SCHEMA WRITER COUNT SESSION [SESSION...] [--batch N] [--first I]

Appends COUNT messages, uid `<WRITER>-<i>` from i = I (default 0), N at a time (default
1), the batches to the sessions in turn (by batch number, so a writer started again at
the same I sends the same batch to the same session), and prints `ack UID...` (flushed)
after each batch returns: a printed uid is an acknowledged one. Each message's content
carries a word of its own (the uid without its '-'), for searching it. Exits 0 when
every batch was acknowledged.
"""

from __future__ import annotations

import argparse

import sessiondb


def word(uid: str) -> str:
    """The word of the message with `uid`: a search for it finds that message alone."""
    return uid.replace("-", "x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("schema")
    parser.add_argument("writer")
    parser.add_argument("count", type=int)
    parser.add_argument("sessions", nargs="+")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--first", type=int, default=0)
    args = parser.parse_args()
    with sessiondb.open_store(args.url, schema=args.schema, patience=60, pool_size=2) as store:
        for start in range(args.first, args.first + args.count, args.batch):
            uids = [f"{args.writer}-{i:05d}" for i in range(start, min(start + args.batch, args.first + args.count))]
            session = args.sessions[(start // args.batch) % len(args.sessions)]
            store.append(session, [{"uid": u, "role": "user", "content": f"message {u} {word(u)}"} for u in uids])
            print("ack " + " ".join(uids), flush=True)


if __name__ == "__main__":
    main()
