"""A gateway process for the crash tests: starts a turn and appends until it is killed.

Usage: gateway_worker.py HOME KEY [KEY...]. Prints `ack N` after each acknowledged append
(N messages in total, round-robin over the keys), so the parent knows what must survive.
"""

from __future__ import annotations

import sys

from sessiondb.gateway import Gateway


def main() -> None:
    home, *keys = sys.argv[1:]
    gw = Gateway(home)
    gw.recover()
    for key in keys:
        gw.turn_started(key)
    n = 0
    while True:
        key = keys[n % len(keys)]
        result = gw.append(key, {"role": "user" if n % 2 == 0 else "assistant", "content": f"{key} #{n}"})
        assert result.stored, result
        n += 1
        print(f"ack {n}", flush=True)


if __name__ == "__main__":
    main()
