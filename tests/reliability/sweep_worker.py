"""A retention sweep for the reliability tests (run as a script, not collected by pytest).

    python sweep_worker.py STORE_PATH

Applies the store's retention rules over and over (store.apply_policy(dry_run=False)),
printing `ack write` (flushed) each time one of the sweep's transactions is acknowledged
(a conversation removed or left, a page of compacted originals), so the parent can kill it
between any two of them, or in the middle of one. Runs until killed.
"""

from __future__ import annotations

import sys

import sessiondb


def main(argv: list[str]) -> int:
    with sessiondb.open_store(argv[1], durability="full", patience=60) as store:
        backend = store._open()
        write = backend.write

        def acknowledged(work):
            done = write(work)
            print("ack write", flush=True)
            return done

        backend.write = acknowledged
        print("ready", flush=True)
        while True:
            store.apply_policy(dry_run=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
