"""One soak process (run as a script): 4 threads mixing every kind of call for SECONDS.

    python soak_worker.py STORE_PATH NAME SECONDS BACKUP_DIR SESSION_ID[,SESSION_ID...]

Each thread loops: append (uid NAME.tT-i, to a pinned session), search, compact
(summary uid NAME.tT-sum-n), prune (a scratch session of its own made and pruned
with everything unpinned), back up. It prints `ack UID` per acknowledged append,
`sum UID` per acknowledged compaction, `backup PATH` per finished backup, `refused
CLASS` for expected refusals (a lease held by another, a scratch session pruned by a
neighbour), and `crash ...` with a traceback for anything else.
"""

from __future__ import annotations

import os
import random
import sys
import threading
import time
import traceback

import sessiondb

THREADS = 4
EXPECTED = (sessiondb.CompactionBusy, sessiondb.LeaseLost, sessiondb.NotFound)


def main(argv: list[str]) -> int:
    path, name, seconds, backups, session_ids = argv[1], argv[2], float(argv[3]), argv[4], argv[5].split(",")
    out = threading.Lock()

    def say(line: str) -> None:
        with out:
            print(line, flush=True)

    with sessiondb.open_store(path, durability="full", patience=60) as store:
        deadline = time.monotonic() + seconds

        def thread(t: int) -> None:
            rng = random.Random(f"{name}-{t}")
            me = f"{name}.t{t}"
            i = n = b = 0
            while time.monotonic() < deadline:
                op = rng.choices(["append", "search", "compact", "prune", "backup"], [50, 20, 10, 10, 10])[0]
                try:
                    if op == "append":
                        uid = f"{me}-{i}"
                        store.append(rng.choice(session_ids), {"uid": uid, "role": "user", "content": f"kyoto {uid}"})
                        i += 1
                        say(f"ack {uid}")
                    elif op == "search":
                        store.search("kyoto", limit=20)
                    elif op == "compact":
                        lease = store.begin_compaction(rng.choice(session_ids), holder=me, ttl=60)
                        uid = f"{me}-sum-{n}"
                        n += 1
                        store.commit_compaction(lease, [{"uid": uid, "role": "assistant", "content": "summary"}])
                        say(f"sum {uid}")
                    elif op == "prune":
                        scratch = store.create_session("scratch")
                        store.append(scratch.id, {"role": "user", "content": "scratch"})
                        store.prune(older_than=0, force=True)
                    else:
                        target = f"{backups}/{me}-{b}.db"  # a backup refuses an existing file
                        store.backup(target)
                        if (b - 1) % 25 and os.path.exists(previous := f"{backups}/{me}-{b - 1}.db"):
                            os.unlink(previous)  # keep every 25th and the latest: disk stays small
                        b += 1
                        say(f"backup {target}")
                except EXPECTED as exc:
                    say(f"refused {type(exc).__name__}")
                except BaseException:  # noqa: BLE001 - reported to the parent
                    say("crash " + traceback.format_exc().replace("\n", " | "))

        threads = [threading.Thread(target=thread, args=(t,)) for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
