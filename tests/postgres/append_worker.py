"""A writer process of the fleet tests: its own store handle (its own pool) on the server.

    python append_worker.py URL SCHEMA WRITER COUNT SESSION [SESSION...]

Appends COUNT messages, uid `<WRITER>-<i>`, to the sessions in turn, and prints `ack UID`
(flushed) after each append returns: a printed uid is an acknowledged one. Exits 0 when
every append was acknowledged.
"""

from __future__ import annotations

import sys

import sessiondb


def main() -> None:
    url, schema, writer, count, *sessions = sys.argv[1:]
    with sessiondb.open_store(url, schema=schema, patience=60, pool_size=2) as store:
        for i in range(int(count)):
            uid = f"{writer}-{i:05d}"
            store.append(sessions[i % len(sessions)], {"uid": uid, "role": "user", "content": f"message {uid}"})
            print(f"ack {uid}", flush=True)


if __name__ == "__main__":
    main()
