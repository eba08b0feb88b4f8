"""The long tier (`make reliability-postgres`): the server SIGKILLed mid-load, again and again.

With synchronous_commit=on (tests/pgserver.py), an append sessiondb acknowledged was
flushed to the server's WAL before the acknowledgement, so crash recovery keeps it. Two
writer processes append through every crash (each retries within its patience); then
the writers themselves are SIGKILLed. Every acknowledged uid must be stored exactly once,
in each writer's order, and the store must pass verify().
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time

import pytest

import sessiondb
from fleet_writers import WORKER, check_sessions

ROUNDS = 100
pytestmark = pytest.mark.long


def test_a_hundred_server_kills_mid_load_lose_no_acknowledged_append(pg_server, pg_url, pg_schema, tmp_path):
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        sessions = [store.create_session("fleet").id for _ in range(2)]
    logs = [tmp_path / f"w{k}.acks" for k in range(2)]
    writers = [subprocess.Popen([sys.executable, str(WORKER), pg_url, pg_schema, f"w{k}", "1000000", *sessions],
                                stdout=open(log, "w"), stderr=subprocess.PIPE, text=True)
               for k, log in enumerate(logs)]
    rng = random.Random(21)
    kills = 0
    try:
        for _ in range(ROUNDS):
            time.sleep(rng.uniform(0.2, 0.8))
            dead = [(w.returncode, w.stderr.read()[-2000:]) for w in writers if w.poll() is not None]
            assert not dead, f"a writer died (exit status, stderr): {dead}"
            pg_server.kill()
            kills += 1
            pg_server.start()
        time.sleep(1.0)
    finally:
        for w in writers:
            w.send_signal(signal.SIGKILL)
            w.wait()
    acked = [line.split()[1] for log in logs for line in log.read_text().splitlines() if line.startswith("ack ")]
    assert kills >= ROUNDS and len(acked) >= 2 * ROUNDS, (kills, len(acked))
    print(f"{kills} server kills, {len(acked)} acknowledged appends checked")
    with sessiondb.open_store(pg_url, schema=pg_schema) as store:
        check_sessions(store, sessions, acked)
