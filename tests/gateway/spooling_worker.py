"""A gateway process whose store is locked by another process: it appends until killed.

Usage: spooling_worker.py HOME KEY N. Appends N messages to KEY, one per call, and prints
`ack I PATH` as soon as append I returned deferred (PATH: the spool file it named), then
`done`, and waits on stdin to be killed: the parent knows exactly what was accepted.
"""

from __future__ import annotations

import sys

from sessiondb.gateway import Gateway


def main() -> None:
    home, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    gw = Gateway(home, patience=0.1, retry_interval=3600)  # no retry while the parent holds the lock
    for i in range(n):
        result = gw.append(key, {"role": "user" if i % 2 == 0 else "assistant", "content": f"{key} #{i}"})
        assert result.deferred, result
        print(f"ack {i} {result.spooled_to}", flush=True)
    print("done", flush=True)
    sys.stdin.readline()


if __name__ == "__main__":
    main()
