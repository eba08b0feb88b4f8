"""Where an append's time goes on the PostgreSQL server: pgbench, no Python in the loop.

    .venv/bin/python bench/profile_pg_append.py [--transactions 3000] [--rounds 3]

A fresh server (tests/pgserver.py, fsync and synchronous_commit on) holds one schema per
variant, each migrated like a real store and then stripped of what the variant leaves
out; pgbench runs one statement per transaction against each in turn, rounds alternating
between the variants (the machine is shared). Every variant's transaction is one
message (or one session update) committed on its own, as an unbatched append is:

- raw: the fleet benchmark's raw loop, a four-column table without any index;
- messages, bare: the messages table's columns, no index, no search column;
- then adding, one at a time, the words tsvector, the B-tree indexes, the words GIN
  index and the CJK trigram index (the whole table as a store has it);
- the session row's update an append makes, with and without an index over
  `last_activity_at` (without it the update can be HOT);
- the whole append_fresh function, as `messages.append_fresh` calls it.

Prints transactions per second of each variant (its best round: the machine is shared,
and the best is the least disturbed) and the cost per transaction in microseconds above
the raw loop's.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import pgserver  # noqa: E402

import psycopg  # noqa: E402

import sessiondb  # noqa: E402

SESSIONS = 50  # each transaction picks one at random, as a fleet's writers are spread over sessions
TEXT = "'w says kyoto temple garden market ramen station ticket hotel museum river bridge castle ' || :u"
INSERT = ("\\set s random(1, %d)\n\\set u random(1, 2000000000)\n"
          "INSERT INTO messages(session_id, uid, seq, role, content, \"timestamp\") VALUES "
          "('s' || :s, 'u' || :u || '-' || :client_id, 0, 'user', " + TEXT + ", 1.0e9 + :u) "
          "ON CONFLICT DO NOTHING;\n") % SESSIONS
RAW = ("\\set u random(1, 2000000000)\n"
       "INSERT INTO raw_messages(session_id, role, content, created) VALUES ('s', 'user', " + TEXT + ", :u);\n")
UPDATE = ("\\set s random(1, %d)\n"
          "UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + 0, "
          "last_activity_at = greatest(last_activity_at, extract(epoch from clock_timestamp())::float8) "
          "WHERE id = 's' || :s;\n") % SESSIONS
FRESH = ("\\set s random(1, %d)\n\\set u random(1, 2000000000)\n"
         "SELECT append_fresh('s' || :s, ARRAY['u' || :u || '-' || :client_id], ARRAY['user'], ARRAY[" + TEXT + "], "
         "ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[], ARRAY[NULL]::text[], "
         "ARRAY[NULL]::text[], ARRAY[NULL]::bigint[], ARRAY[1.0e9 + :u]::float8[], ARRAY[NULL]::text[], "
         "ARRAY['active'], 1, 0, extract(epoch from clock_timestamp())::float8);\n") % SESSIONS

# name: (script, statements run on a freshly migrated schema to make the variant)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "raw (4 columns, no index)": (RAW, ["CREATE TABLE raw_messages (session_id text, role text, content text, "
                                        "created float8)"]),
    "messages, bare": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings, messages_uid, "
                                "messages_session, messages_active",
                                "ALTER TABLE messages DROP COLUMN words, DROP CONSTRAINT messages_pkey, "
                                "DROP CONSTRAINT messages_session_id_fkey"]),
    "+ words tsvector": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings, messages_uid, "
                                  "messages_session, messages_active",
                                  "ALTER TABLE messages DROP CONSTRAINT messages_pkey, "
                                  "DROP CONSTRAINT messages_session_id_fkey"]),
    "+ pkey, fkey, 3 B-trees": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings"]),
    "+ words GIN": (INSERT, ["DROP INDEX messages_cjk_substrings"]),
    "+ CJK trigram index (the table)": (INSERT, []),
    "messages, no search (B-trees only)": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings",
                                                    "ALTER TABLE messages DROP COLUMN words"]),
    "session update, recent index": (UPDATE, []),
    "session update, HOT (no recent index)": (UPDATE, ["DROP INDEX sessions_recent"]),
    "append_fresh, as released": (FRESH, []),
    "append_fresh, HOT session update": (FRESH, ["DROP INDEX sessions_recent"]),
    "append_fresh, no search columns": (FRESH, ["DROP INDEX messages_words, messages_cjk_substrings",
                                                "ALTER TABLE messages DROP COLUMN words"]),
    "append_fresh, HOT and no search": (FRESH, ["DROP INDEX sessions_recent, messages_words, "
                                                "messages_cjk_substrings", "ALTER TABLE messages DROP COLUMN words"]),
    "session update, minute-bucket index": (UPDATE, [
        "DROP INDEX sessions_recent",
        "ALTER TABLE sessions ADD COLUMN recent_minute bigint GENERATED ALWAYS AS "
        "(floor(coalesce(last_activity_at, started_at) / 60)) STORED",
        "CREATE INDEX sessions_recent_minute ON sessions(recent_minute DESC)"]),
}


def prepare(url: str, schema: str, statements: list[str]) -> None:
    sessiondb.open_store(url, schema=schema).close()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET search_path TO {schema}, sessiondb_extensions")
        for s in range(1, SESSIONS + 1):
            conn.execute("INSERT INTO sessions(id, source, started_at) VALUES (%s, 'bench', 1.0e9)", (f"s{s}",))
        for statement in statements:
            conn.execute(statement)
        conn.execute("VACUUM ANALYZE")


def pgbench(server: pgserver.Server, url: str, schema: str, script: Path, count: int, run: int) -> tuple[float, float]:
    """(transactions per second, the server backend's CPU microseconds per transaction) of
    `count` transactions of `script`. The CPU time is read from the kernel's account of the
    backend process (/proc/PID/schedstat), polled while pgbench runs: unlike the rate, it
    hardly moves with the load of other work on the machine."""
    argv = [str(server.bindir / "pgbench"), "-n", "-M", "prepared", "-t", str(count), "-c", "1",
            "-f", str(script), "-h", str(server.socket_dir), "-p", str(pgserver.PORT), "-U", "postgres", "postgres"]
    env = {"PGOPTIONS": f"-c search_path={schema},sessiondb_extensions", "PATH": "/usr/bin:/bin",
           "PGAPPNAME": f"profile-{run}"}  # this run's backend, never the last one's still exiting
    bench = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    cpu_ns, backend = 0, None
    with psycopg.connect(url, autocommit=True) as conn:
        while bench.poll() is None:
            if backend is None:
                row = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                                   (env["PGAPPNAME"],)).fetchone()
                backend = row and row[0]
            if backend is not None:
                try:
                    cpu_ns = int(Path(f"/proc/{backend}/schedstat").read_text().split()[0])
                except OSError:
                    pass
            time.sleep(0.005)
    out, err = bench.communicate()
    found = re.search(r"tps = ([\d.]+)", out)
    if found is None:
        raise RuntimeError(f"pgbench failed on {schema}: {err.strip() or out.strip()}")
    return float(found.group(1)), cpu_ns / 1000 / count if cpu_ns else math.nan  # nan: the backend was missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    server = pgserver.start_server()
    work = Path(tempfile.mkdtemp(prefix="sessiondb-profile-pg-"))
    try:
        url = server.url()
        scripts = {}
        for i, (name, (script, statements)) in enumerate(VARIANTS.items()):
            prepare(url, f"variant_{i}", statements)
            scripts[name] = (f"variant_{i}", work / f"variant_{i}.sql")
            scripts[name][1].write_text(script)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        for round_ in range(args.rounds):
            for i, (name, (schema, path)) in enumerate(scripts.items()):
                runs[name].append(pgbench(server, url, schema, path, args.transactions, round_ * len(scripts) + i))
        print(f"pgbench -M prepared -c 1 -t {args.transactions}, {args.rounds} rounds alternating, one statement per "
              "transaction: the server backend's CPU us per transaction (median of the rounds), the best round's "
              "transactions/s (the least disturbed by other work; the rates of every round after it)")
        for name, figures in runs.items():
            cpu = statistics.median(c for _, c in figures if not math.isnan(c))
            rates = [round(t) for t, _ in figures]
            print(f"{name:42} {cpu:6.0f} us CPU {max(rates):7}/s  {rates}")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()
