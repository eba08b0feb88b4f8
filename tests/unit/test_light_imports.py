"""A process that opens a store, writes, resumes, reads and searches carries none of the
modules only rarer calls need, each megabytes resident: asyncio (AsyncStore's coroutines),
importlib.metadata (an export's stamp), psutil (who else holds a store) and hashlib (a
repair's digests). An agent's whole memory budget is what a resume peaks at."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("asyncio", "importlib.metadata", "psutil", "hashlib")

SCRIPT = """
import json, sys
import sessiondb
with sessiondb.open_store(sys.argv[1]) as store:
    sid = store.create_session("cli", title="light").id
    store.append(sid, [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    assert len(store.resume(sid)) == 2 and store.transcript(sid) and store.search("hello")
print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))
"""


def test_opening_and_reading_a_store_loads_none_of_the_heavy_modules(tmp_path):
    # A fresh interpreter: this one has loaded everything the rest of the suite needed.
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "light.db"), *HEAVY],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
