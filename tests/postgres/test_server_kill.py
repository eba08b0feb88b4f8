"""The long tier (`make reliability-postgres`): the server SIGKILLed mid-load, again and again.

With synchronous_commit=on (tests/pgserver.py), an append sessiondb acknowledged was
flushed to the server's WAL before the acknowledgement, so crash recovery keeps it. Three
writer processes append batches to two conversations' original ids through every crash
(each retries within its patience) while a fourth process rotates and compacts them in
place, in turn. Every few server kills one writer is SIGKILLed too and started again: it
re-sends the batch it had not seen acknowledged, with the same uids. At the end every
acknowledged message is stored once across its conversation's lineage, each writer's in
its order, found by a search for its own word, every acknowledged summary is stored, and
the store passes verify().
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from collections import Counter

import pytest

import sessiondb
from fleet_writers import COMPACTOR, Writer, check_store, stopped

ROUNDS = 100  # server kills
WRITERS = 3
BATCH = 4
WRITER_KILL_EVERY = 5  # rounds; the writers are killed in turn
pytestmark = pytest.mark.long


def test_a_hundred_server_kills_mid_load_lose_no_acknowledged_write(pg_server, pg_url, pg_schema, tmp_path):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        conversations = [store.create_session("fleet").id for _ in range(2)]
    writers = [Writer(f"w{k}", pg_url, pg_schema, conversations, tmp_path / f"w{k}.acks", BATCH) for k in range(WRITERS)]
    for writer in writers:
        writer.start()
    compactions = tmp_path / "compactor.acks"
    with open(compactions, "w") as out, open(tmp_path / "compactor.stderr", "w") as err:
        compactor = subprocess.Popen([sys.executable, str(COMPACTOR), pg_url, pg_schema, "c", *conversations],
                                     stdout=out, stderr=err)
    rng = random.Random(31)
    kills = 0
    try:
        for round_ in range(ROUNDS):
            time.sleep(rng.uniform(0.2, 0.8))
            dead = [d for d in map(Writer.died, writers) if d]
            assert not dead, f"a writer died: {dead}"
            assert compactor.poll() is None, f"the compactor died: {(tmp_path / 'compactor.stderr').read_text()}"
            pg_server.kill()
            kills += 1
            pg_server.start()
            if round_ % WRITER_KILL_EVERY == 0:
                writer = writers[(round_ // WRITER_KILL_EVERY) % WRITERS]
                writer.kill()
                writer.restarts += 1
                writer.start()
        time.sleep(1.0)
    finally:
        acked, summaries, refusals = stopped(compactor, writers, compactions)
    total = sum(len(uids) for uids in acked.values())
    restarts = sum(w.restarts for w in writers)
    rotations = sum(1 for s in summaries if s[1] == "rotate")
    assert kills >= ROUNDS and total >= 2 * ROUNDS * BATCH, (kills, total)
    assert restarts >= ROUNDS // WRITER_KILL_EVERY and rotations >= 10 and len(summaries) - rotations >= 10, \
        (restarts, rotations, len(summaries))
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        searched, problems = check_store(store, conversations, acked, [s[2] for s in summaries])
    print(f"{kills} server kills, {restarts} writer kills and restarts, {total} acknowledged messages in "
          f"{total // BATCH} batches, {rotations} rotations and {len(summaries) - rotations} in-place compactions "
          f"acknowledged (compactions refused: {dict(refusals)}), {searched} searches; problems: {dict(Counter(kind for kind, _ in problems))}")
    assert problems == [], "\n".join(f"{kind}: {what}" for kind, what in problems[:20])
