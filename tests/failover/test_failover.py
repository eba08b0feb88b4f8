"""The failover tier (`make failover`): the primary of a pg_auto_failover formation SIGKILLed
mid-load, again and again, and the secondary promoted in its place.

With synchronous replication (`synchronous_standby_names` set by the monitor,
`synchronous_commit=on`), an append sessiondb acknowledged was flushed on the standby
before the acknowledgement, so the promoted standby holds it. Three writer processes
append numbered batches with uids to two conversations through a multi-host URL that
follows the primary, while a fourth rotates and compacts them in place, in turn. A writer
that gives up (its patience spent) is started again at its first unacknowledged batch and
re-sends it with the same uids. After each kill this process appends a probe through its
own handle at once: the time from the kill to the probe's acknowledgement is the failover's
cost to a writer. The killed node is started again and rejoins as the secondary before the
next kill, so every kill meets a synchronous standby. At the end every acknowledged message
is stored once across its conversation's lineage, each writer's in its order, found by a
search for its own word, every acknowledged summary and probe is stored, and verify() passes.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from collections import Counter

import pytest

import sessiondb
from fleet_writers import COMPACTOR, Writer, check_store, stopped

FAILOVERS = 20
WRITERS = 3
BATCH = 4
SCHEMA = "failover"
pytestmark = pytest.mark.long


def test_failovers_by_sigkill_of_the_primary_mid_load_lose_no_acknowledged_write(formation, tmp_path):
    url = formation.url()
    with sessiondb.open_store(url, schema=SCHEMA) as store:
        conversations = [store.create_session("fleet").id for _ in range(2)]
        probes_session = store.create_session("probe").id
    writers = [Writer(f"w{k}", url, SCHEMA, conversations, tmp_path / f"w{k}.acks", BATCH) for k in range(WRITERS)]
    for writer in writers:
        writer.start()
    compactions = tmp_path / "compactor.acks"
    with open(compactions, "w") as out, open(tmp_path / "compactor.stderr", "w") as err:
        compactor = subprocess.Popen([sys.executable, str(COMPACTOR), url, SCHEMA, "c", *conversations],
                                     stdout=out, stderr=err)
    rng = random.Random(37)
    killed: list[str] = []
    to_ack: list[float] = []  # seconds from a kill to the probe's acknowledgement
    gave_up: list[str] = []
    probes: list[str] = []
    try:
        with sessiondb.open_store(url, schema=SCHEMA, patience=120, pool_size=1) as prober:
            prober.append(probes_session, {"uid": "probe-000", "role": "user", "content": "probe"})
            probes.append("probe-000")
            for round_ in range(1, FAILOVERS + 1):
                time.sleep(rng.uniform(0.5, 1.5))  # under load: the writers and the compactor run meanwhile
                gave_up += restart_the_writers_that_gave_up(writers)
                assert compactor.poll() is None, f"the compactor died: {(tmp_path / 'compactor.stderr').read_text()}"
                victim = formation.kill_primary()
                at = time.monotonic()
                uid = f"probe-{round_:03d}"
                prober.append(probes_session, {"uid": uid, "role": "user", "content": "probe"})
                to_ack.append(time.monotonic() - at)
                probes.append(uid)
                successor = formation.wait_primary(other_than=victim)
                killed.append(f"{victim.name}->{successor.name}")
                formation.revive(victim)
                formation.wait_healthy()
            time.sleep(1.0)
            gave_up += restart_the_writers_that_gave_up(writers)
            time.sleep(1.0)
    finally:
        acked, summaries, refusals = stopped(compactor, writers, compactions)
    total = sum(len(uids) for uids in acked.values())
    rotations = sum(1 for s in summaries if s[1] == "rotate")
    assert len(killed) >= FAILOVERS and len(set(k.split("->")[1] for k in killed)) == 2, killed  # both nodes led
    assert total >= FAILOVERS * BATCH and rotations >= 2 and len(summaries) - rotations >= 2, \
        (total, rotations, len(summaries))
    with sessiondb.open_store(url, schema=SCHEMA) as store:
        searched, problems = check_store(store, conversations, acked, [s[2] for s in summaries])
        stored_probes = [m.uid for m in store.transcript(probes_session)]
    problems += [("probe", f"stored {stored_probes}, acknowledged {probes}")] if stored_probes != probes else []
    print(f"\n{len(killed)} failovers by SIGKILL of the primary node ({', '.join(killed)}); "
          f"kill to first acknowledged append on the new primary: p50 {statistics.median(to_ack):.2f} s, "
          f"max {max(to_ack):.2f} s (all: {' '.join(f'{t:.1f}' for t in to_ack)}); {total} acknowledged messages in {total // BATCH} batches, "
          f"{rotations} rotations and {len(summaries) - rotations} in-place compactions acknowledged "
          f"(refused: {dict(refusals)}), writers that gave up and re-sent: {len(gave_up)} {gave_up[:1]}, {searched} searches; "
          f"problems: {dict(Counter(kind for kind, _ in problems))}")
    assert problems == [], "\n".join(f"{kind}: {what}" for kind, what in problems[:20])


def restart_the_writers_that_gave_up(writers: list[Writer]) -> list[str]:
    """Start again, at its first unacknowledged batch, every writer that exited (its patience
    spent): it re-sends that batch with the same uids. What each said when it gave up."""
    said = []
    for writer in writers:
        reason = writer.died()
        if reason is not None:
            said.append(reason)
            writer.restarts += 1
            writer.start()
    return said
