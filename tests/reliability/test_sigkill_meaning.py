"""SIGKILL while an embedder computes vectors: every acknowledged message is recalled by its
meaning after the store is opened again (S-54).

A writer opened with an embedder appends one message at a time and reports each
acknowledgement; its indexer computes vectors behind it. It is killed once it has reported
its own random number of them (so mid-work however loaded the machine is), and a new writer
carries on where the acknowledgements stopped. After each round the store is opened again
and a question that shares no word with any message must find every acknowledged one by
meaning, each once, and nothing unacknowledged.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import sessiondb
from sessiondb.testing.contract.test_meaning import Concepts

ROOT = Path(__file__).parents[2]
WRITER = (
    "import sys\n"
    f"sys.path.insert(0, {str(ROOT)!r})\n"
    "import sessiondb\n"
    "from sessiondb.testing.contract.test_meaning import Concepts\n"
    "with sessiondb.open_store(sys.argv[1], embedder=Concepts()) as store:\n"
    "    for i in range(int(sys.argv[3]), 10**6):\n"
    "        uid = f'm{i}'\n"
    "        store.append(sys.argv[2], {'uid': uid, 'role': 'user', 'content': f'my dog {uid}'})\n"
    "        print('ack', uid, flush=True)\n"
)
ROUNDS = 3


def test_every_acknowledged_message_is_recalled_by_meaning_after_a_kill(tmp_path):
    db = tmp_path / "state.db"
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli").id
    rng = random.Random(54)
    acknowledged: list[str] = []
    for _ in range(ROUNDS):
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), sid, str(len(acknowledged))],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(rng.randint(5, 25)):
            line = writer.stdout.readline()
            assert line.startswith("ack "), writer.stderr.read()
            acknowledged.append(line.split()[1])
        writer.kill()
        writer.wait()
        # An append may have been stored without its acknowledgement being read: it is the
        # next uid, which the next writer sends again (stored once, by uid).
        with sessiondb.open_store(db, embedder=Concepts()) as store:
            found = [h.uid for h in store.recall("Which pet?", limit=1000) if h.found_by == "meaning"]
            stored = {m.uid for m in store.transcript(sid)}
        assert set(acknowledged) <= set(found), "an acknowledged message was not recalled by its meaning"
        assert len(found) == len(set(found)) and set(found) == stored
    assert len(acknowledged) >= ROUNDS * 5
