"""Where an append's time goes on the PostgreSQL server, measured by the server's own CPU time.

    .venv/bin/python bench/profile_pg_append.py [--statements 2000] [--rounds 3]

A fresh server (tests/pgserver.py, fsync and synchronous_commit on) holds one schema per
variant, each migrated like a real store and then stripped of what the variant leaves
out; each variant's statement runs on its own connection, every run committed on its
own as an unbatched append is, rounds alternating between the variants (the machine is
shared), each round in an order of its own. Each run stores one message (or updates one
session row):

- raw: the fleet benchmark's raw loop, a four-column table without any index;
- messages, bare: the messages table's columns, no index, no search column;
- then adding, one at a time, the words tsvector, the B-tree indexes, the words GIN
  index and the CJK trigram index (the whole table as a store has it), that last one
  also as migration 0005 made it (its condition on the folded text);
- the session row's update an append makes, with migration 0001's index over
  `last_activity_at` and with 0006's over the minute (HOT);
- the whole append_fresh function, as `messages.append_fresh` calls it: 0007's with the
  indexes of 0005 and of 0006 and without any search column, and 0008's (the words in its
  INSERT, a one-message VALUES; 0009 left one message's path as it was).

The INSERT variants leave the words out, so from migration 0008 on a trigger computes
them: the "+ words tsvector" line is what an INSERT that does not compute them pays.

Prints, for each variant, the CPU time its server process spent per statement (the
kernel's account, which the load of other work hardly moves: the figure to compare) and
its statements per second (the best round's, and every round's: these move with the
load and with the disk's flushes).

    .venv/bin/python bench/profile_pg_append.py --long-session 10000

instead appends that many messages to one session through `messages.append_fresh`, on
one connection from the session's first message on (as a new store's first connection
does), for a store migrated up to 0006 and for one migrated up to 0007, and prints the
server's CPU per append for each fifth of the session.

    .venv/bin/python bench/profile_pg_append.py --batch-sizes 1000,4000,8000 [--rounds 3]

instead makes one append of each of those many messages into a new session through
`messages.append_fresh`, for a store migrated up to 0008 and for one migrated up to 0009,
and prints the time per message (client and server together) and the server's CPU in it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import random
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
import pgserver  # noqa: E402

import psycopg  # noqa: E402

import sessiondb  # noqa: E402
from sessiondb.inputs import prepare_messages  # noqa: E402
from sessiondb.store.postgres import messages, migrations  # noqa: E402

SESSIONS = 50  # each transaction picks one at random, as a fleet's writers are spread over sessions
TEXT = "'w says kyoto temple garden market ramen station ticket hotel museum river bridge castle ' || %(u)s"
INSERT = ("INSERT INTO messages(session_id, uid, seq, role, content, \"timestamp\") VALUES "
          "(%(s)s, 'u' || %(u)s, 0, 'user', " + TEXT + ", 1.0e9 + %(u)s) ON CONFLICT DO NOTHING")
RAW = "INSERT INTO raw_messages(session_id, role, content, created) VALUES ('s', 'user', " + TEXT + ", %(u)s)"
UPDATE = ("UPDATE sessions SET message_count = message_count + 1, tool_call_count = tool_call_count + 0, "
          "last_activity_at = greatest(last_activity_at, extract(epoch from clock_timestamp())::float8) "
          "WHERE id = %(s)s")
FRESH = ("SELECT append_fresh(%(s)s, ARRAY['u' || %(u)s, 'user', " + TEXT + ", NULL, NULL, NULL, NULL, NULL, "
         "NULL, NULL, 'active'], ARRAY[NULL]::bigint[], ARRAY[1.0e9 + %(u)s]::float8[], 1, 0, "
         "extract(epoch from clock_timestamp())::float8)")

# What migration 0006 changed, put back: the recent-sessions index over last_activity_at,
# and the CJK trigram index's condition on the folded text.
RECENT_0001 = ["DROP INDEX sessions_active_minute",
               "CREATE INDEX sessions_recent ON sessions((coalesce(last_activity_at, started_at)) DESC, id DESC)"]
CJK_0005 = ["DROP INDEX messages_cjk_substrings",
            "CREATE INDEX messages_cjk_substrings ON messages USING gin "
            "(search_fold(search_text(role, content, parts)) gin_trgm_ops) "
            "WHERE state <> 'rewound' AND has_cjk(search_fold(search_text(role, content, parts)))"]
# Migration 0008's triggers compute the words of an INSERT that leaves them out.
WORDS_TRIGGERS = ["DROP TRIGGER IF EXISTS messages_words_inserted ON messages",
                  "DROP TRIGGER IF EXISTS messages_words_changed ON messages"]
NO_SEARCH = [*WORDS_TRIGGERS, "DROP INDEX messages_words, messages_cjk_substrings",
             "ALTER TABLE messages DROP COLUMN words"]

# name: (the statement, what is run on a freshly migrated schema to make the variant)
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "raw (4 columns, no index)": (RAW, ["CREATE TABLE raw_messages (session_id text, role text, content text, "
                                        "created float8)"]),
    "messages, bare": (INSERT, [*WORDS_TRIGGERS, "DROP INDEX messages_words, messages_cjk_substrings, messages_uid, "
                                "messages_session, messages_active",
                                "ALTER TABLE messages DROP COLUMN words, DROP CONSTRAINT messages_pkey, "
                                "DROP CONSTRAINT messages_session_id_fkey"]),
    "+ words tsvector": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings, messages_uid, "
                                  "messages_session, messages_active",
                                  "ALTER TABLE messages DROP CONSTRAINT messages_pkey, "
                                  "DROP CONSTRAINT messages_session_id_fkey"]),
    "+ pkey, fkey, 3 B-trees": (INSERT, ["DROP INDEX messages_words, messages_cjk_substrings"]),
    "+ words GIN": (INSERT, ["DROP INDEX messages_cjk_substrings"]),
    "+ CJK index, condition on folded text (0005)": (INSERT, CJK_0005),
    "+ CJK index, condition on the text (0006)": (INSERT, []),
    "messages, B-trees, no search": (INSERT, NO_SEARCH),
    "session update, recent index (0001)": (UPDATE, RECENT_0001),
    "session update, minute index (0006, HOT)": (UPDATE, []),
    "append_fresh of 0007, 0005's indexes": (FRESH, RECENT_0001 + CJK_0005),
    "append_fresh of 0007": (FRESH, []),
    "append_fresh of 0007 without search columns": (FRESH, NO_SEARCH),
    "append_fresh of 0008 (one message as 0009)": (FRESH, []),
}
#: The variants of a store migrated only up to 0007 (whose append_fresh does not write the words).
UP_TO_0007 = {name for name in VARIANTS if name.startswith("append_fresh of 0007")}


@contextmanager
def migrations_up_to(upto: str | None) -> Iterator[None]:
    """Stores opened meanwhile are migrated as the release whose last migration was
    `upto` migrated them (None: every migration)."""
    known = migrations.MIGRATIONS
    migrations.MIGRATIONS = [m for m in known if upto is None or m[0][:4] <= upto]
    try:
        yield
    finally:
        migrations.MIGRATIONS = known


def connect_to(url: str, schema: str, **options) -> psycopg.Connection:
    """An autocommit connection whose statements name the tables of `schema`, as a store's do."""
    conn = psycopg.connect(url, autocommit=True, **options)
    conn.execute(f"SET search_path TO {schema}, sessiondb_extensions")
    return conn


def prepare(url: str, schema: str, statements: list[str], upto: str | None = None) -> None:
    with migrations_up_to(upto):
        sessiondb.open_store(url, schema=schema).close()
    with connect_to(url, schema) as conn:
        for s in range(1, SESSIONS + 1):
            conn.execute("INSERT INTO sessions(id, source, started_at) VALUES (%s, 'bench', 1.0e9)", (f"s{s}",))
        for statement in statements:
            conn.execute(statement)
        conn.execute("VACUUM ANALYZE")


def measure(url: str, schema: str, statement: str, count: int, rng: random.Random) -> tuple[float, float]:
    """(statements per second, the server backend's CPU microseconds per statement) of
    `count` runs of `statement`, each committed on its own. The CPU time is the kernel's
    account of the backend process (/proc/PID/schedstat): unlike the rate, it hardly
    moves with the load of other work on the machine."""
    with connect_to(url, schema, prepare_threshold=0) as conn:
        schedstat = Path(f"/proc/{conn.info.backend_pid}/schedstat")
        params = [{"s": f"s{rng.randrange(1, SESSIONS + 1)}", "u": rng.randrange(2_000_000_000)} for _ in range(count)]
        conn.execute(statement, params[0])  # prepared, and the function's plans cached, before the clock
        cpu, wall = int(schedstat.read_text().split()[0]), time.perf_counter()
        for p in params[1:]:
            conn.execute(statement, p)
        wall, cpu = time.perf_counter() - wall, int(schedstat.read_text().split()[0]) - cpu
    return (count - 1) / wall, cpu / 1000 / (count - 1)


def backend_cpu_us(conn: psycopg.Connection) -> float:
    return int(Path(f"/proc/{conn.info.backend_pid}/schedstat").read_text().split()[0]) / 1000


def long_session(url: str, count: int) -> None:
    """Server CPU per append as one session grows, under migration 0006's append_fresh and 0007's."""
    bands = 5
    for upto in ("0006", "0007"):
        schema = f"long_{upto}"
        with migrations_up_to(upto), sessiondb.open_store(url, schema=schema) as store:
            session_id = store.create_session("bench").id
        batches = [prepare_messages({"role": "user", "content": f"message {i} says kyoto temple garden market"})
                   for i in range(count)]
        figures = []
        with connect_to(url, schema) as conn:
            for band in range(bands):
                cpu = backend_cpu_us(conn)
                part = batches[band * count // bands:(band + 1) * count // bands]
                for batch in part:
                    messages.append_fresh(conn, session_id, batch, time.time())
                figures.append((backend_cpu_us(conn) - cpu) / len(part))
        print(f"append_fresh of {upto}, one session of {count}: server CPU us per append, by fifth of the session: "
              + ", ".join(f"{f:.0f}" for f in figures))


def large_batches(url: str, sizes: list[int], rounds: int) -> None:
    """Cost per message of one append of many messages into a new session, through
    migration 0008's append_fresh and 0009's, rounds alternating. Each append runs on a
    connection of its own, after one small append: so the function is compiled, and the
    batch's INSERT runs with a plan for its values, as in a connection's first five."""
    figures: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(rounds):
        for upto in ("0008", "0009"):
            with migrations_up_to(upto), sessiondb.open_store(url, schema=f"batch_{upto}") as store:
                sessions = [(store.create_session("bench").id, store.create_session("bench").id) for _ in sizes]
            for size, (warm, session_id) in zip(sizes, sessions):
                with connect_to(url, f"batch_{upto}") as conn:
                    messages.append_fresh(conn, warm, prepare_messages([{"role": "user", "content": "warm"}] * 2),
                                          time.time())
                    batch = prepare_messages([{"role": ("user", "assistant")[i % 2], "content": f"message {i} of kyoto",
                                               **({"token_count": i} if i % 3 else {})} for i in range(size)])
                    cpu, wall = backend_cpu_us(conn), time.perf_counter()
                    assert messages.append_fresh(conn, session_id, batch, time.time()) is not None
                    figures.setdefault((upto, size), []).append(
                        ((time.perf_counter() - wall) * 1e6 / size, (backend_cpu_us(conn) - cpu) / size))
    for (upto, size), runs in figures.items():
        print(f"append_fresh of {upto}, one append of {size:6} messages: {statistics.median(w for w, _ in runs):5.0f} us "
              f"a message ({statistics.median(c for _, c in runs):5.0f} us of it the server's CPU), median of {rounds}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--long-session", type=int, default=0, metavar="N",
                        help="instead: N appends to one session, under migration 0006's function and 0007's")
    parser.add_argument("--batch-sizes", default="", metavar="N,N,...",
                        help="instead: one append of each many messages, under migration 0008's function and 0009's")
    args = parser.parse_args()
    server = pgserver.start_server()
    rng = random.Random(7)
    try:
        url = server.url()
        if args.long_session:
            long_session(url, args.long_session)
            return
        if args.batch_sizes:
            large_batches(url, [int(n) for n in args.batch_sizes.split(",")], args.rounds)
            return
        schemas = {}
        for i, (name, (_, statements)) in enumerate(VARIANTS.items()):
            schemas[name] = f"variant_{i}"
            prepare(url, schemas[name], statements, "0007" if name in UP_TO_0007 else None)
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            # Each round in an order of its own: in a fixed order a variant's figure moved
            # with its place in the round (by some 30 us a statement), not with its work.
            for name in rng.sample(list(VARIANTS), len(VARIANTS)):
                runs[name].append(measure(url, schemas[name], VARIANTS[name][0], args.statements, rng))
        print(f"{args.statements} statements per variant and round, {args.rounds} rounds, each in its own order, each "
              "committed on its own (synchronous_commit on): the server backend's CPU us per statement (median "
              "of the rounds), the best round's statements/s (the least disturbed by other work) and every round's")
        for name, figures in runs.items():
            cpu = statistics.median(c for _, c in figures)
            rates = [round(t) for t, _ in figures]
            print(f"{name:48} {cpu:6.0f} us CPU {max(rates):7}/s  {rates}")
    finally:
        server.destroy()


if __name__ == "__main__":
    main()
