"""One writer's append in exact units, beside the raw loops and OpenAI's `add_items`.

    make bench-exact           (or: .venv/bin/python bench/exact.py [--rounds 5] [--no-write])

Throughput on a shared 2-core machine moves with the load; these figures do not, or
hardly, and each is set beside its target:

- CPU instructions per acknowledged one-message append at durability full (callgrind,
  which counts rather than times: the difference between runs of 1,200 and 200 appends,
  so start-up cancels out), with the search indexer held off; the same with the index
  caught up after every append (the derived index at one-at-a-time rates, the dearest it
  gets); and the raw loops: plain APSW into a table without an index, and into
  sessiondb's own schema.
- WAL pages written per one-message append to a session already holding 3,000 messages,
  counted by a VFS that sees every write reaching the store's WAL (a page is one write of
  the page size), beside the same count for the raw loops.
- Per message of an append of 100 messages, sessiondb's `append` (the indexer held off,
  and with the index caught up) beside the engine's floor (each batch's rows inserted by
  one statement into sessiondb's schema) and OpenAI Agents' `SQLiteSession.add_items` at its
  current release (bench/.venv-openai, as `make bench` has it): callgrind's instructions,
  and the CPU time (user and system, every thread) of alternating rounds, the median
  round's (this one moves with the machine's load).
- On a private PostgreSQL server (tests/pgserver.py): the server's CPU per one-message
  append (the kernel's account of its backend processes) and the client's, sessiondb's
  beside its one statement sent alone and a raw INSERT into the same schema and indexes.

Writes the `exact` section of docs/benchmarks.json (each figure with its target and
whether it was met) unless --no-write, and prints it. Needs valgrind (Debian's, which
`make bench-exact` installs) for the instruction counts; without it they are reported
as not measured.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
DOCS = HERE.parent / "docs"
OPENAI_PYTHON = HERE / ".venv-openai" / "bin" / "python"
SMALL, LARGE = 200, 1200  # appends in the two runs whose difference callgrind counts
HISTORY = 3000  # messages the session holds before the WAL pages are counted
COUNTED_APPENDS = 500
BATCH, WARM, BATCHES = 100, 5, 30  # the batch figures: BATCHES appends of BATCH after WARM of them
VFS_NAME = "sessiondb-bench-wal-count"
#: Who appends the batches: (interpreter, label); sessiondb with its indexer held off (the
#: acknowledged path) and with it (what indexing adds, on the indexer's thread).
BATCHERS = {
    "sessiondb": (Path(sys.executable), "sessiondb.append, the indexer held off"),
    "sessiondb-indexed": (Path(sys.executable), "sessiondb.append, the index caught up"),
    "raw-indexed": (Path(sys.executable), "raw: APSW, one INSERT of the batch's rows into sessiondb's schema"),
    "openai": (OPENAI_PYTHON, "OpenAI Agents SQLiteSession.add_items"),
}

# What callgrind counts, each a child process: (label, target per append or None).
COUNTED = {
    "raw": "raw loop: APSW, one INSERT and COMMIT per message, no index",
    "raw-indexed": "raw loop: one INSERT and COMMIT per message into sessiondb's schema",
    "acknowledged": "sessiondb.append, acknowledged path (the indexer held off)",
    "indexed": "sessiondb.append, the index caught up after every append",
}


# --- the workloads (run in child processes, so each is counted or timed alone) ------------

def texts(n: int) -> list[str]:
    sys.path.insert(0, str(HERE))
    import bench_core
    return bench_core.bodies(n)


def hold_off_indexer() -> None:
    """The indexer's thread never catches up and the store's close does not either: the
    appends are counted without the derived index."""
    from sessiondb.store.sqlite.index import indexer
    indexer.Indexer._serve = lambda self: self._stopping.wait()
    indexer.Indexer.settle = lambda self: None


def sessiondb_appends(directory: Path, bodies: list[str], *, index_each: bool, vfs: str | None = None,
                      before: Callable[[], None] = lambda: None) -> None:
    """One-message appends to one session; `before` runs once the session holds HISTORY
    messages when vfs is given (the WAL count starts there), else at once."""
    import sessiondb
    hold_off_indexer()
    with sessiondb.open_store(directory / "state.db", vfs=vfs) as store:
        sid = store.create_session("bench").id
        if vfs is not None:
            history = [{"role": "user", "content": text} for text in texts(HISTORY)]
            for i in range(0, HISTORY, BATCH):
                store.append(sid, history[i:i + BATCH])
        indexer = store._open()._file.indexer
        indexer.catch_up()
        before()
        for i, text in enumerate(bodies):
            store.append(sid, {"role": ("user", "assistant")[i % 2], "content": text})
            if index_each:
                indexer.catch_up()


def raw_appends(directory: Path, bodies: list[str], *, indexed: bool, vfs: str | None = None,
                before: Callable[[], None] = lambda: None) -> None:
    """bench_core's raw loops, on a VFS when given (their statements, spelled the same)."""
    if indexed:
        conn, sid = _into_store_schema(directory / "raw.db", vfs)
    else:
        conn, sid = _raw_connection(directory / "raw.db", vfs), "s"
        conn.execute("CREATE TABLE m(id INTEGER PRIMARY KEY, session_id TEXT, role TEXT, content TEXT, ts REAL)")
    insert = ("INSERT INTO messages(session_id, uid, seq, role, content, timestamp) VALUES (?, ?, ?, 'user', ?, ?)"
              if indexed else "INSERT INTO m(session_id, role, content, ts) VALUES (?, ?, ?, ?)")

    def one(seq: int, text: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(insert, (sid, f"u{seq}", seq, text, time.time()) if indexed else (sid, "user", text, time.time()))
        conn.execute("COMMIT")

    if vfs is not None:
        for seq, text in enumerate(texts(HISTORY), 1):
            one(seq, text)
    before()
    for seq, text in enumerate(bodies, HISTORY + 1):
        one(seq, text)
    conn.close()


def counted_run(system: str, n: int) -> None:
    """The body callgrind counts."""
    bodies = texts(LARGE)[:n]
    with tempfile.TemporaryDirectory() as d:
        if system.startswith("raw"):
            raw_appends(Path(d), bodies, indexed=system == "raw-indexed")
        else:
            sessiondb_appends(Path(d), bodies, index_each=system == "indexed")


def wal_counter() -> Any:
    """A VFS over the default one, registered as VFS_NAME, that counts the pages written to a
    database's WAL (a page is one write of the page size) while its `counting` is set."""
    import apsw

    class Counting(apsw.VFS):
        def __init__(self) -> None:
            self.pages = 0
            self.counting = False
            super().__init__(VFS_NAME, "")

        def xOpen(self, name: Any, flags: Any) -> apsw.VFSFile:
            return CountedFile(self, name, flags)

    class CountedFile(apsw.VFSFile):
        def __init__(self, vfs: Counting, name: Any, flags: Any) -> None:
            self._vfs = vfs
            filename = name.filename() if isinstance(name, apsw.URIFilename) else name
            self._wal = bool(filename) and filename.endswith((".db-wal",))  # the store's own WAL only
            super().__init__("", name, flags)

        def xWrite(self, data: Any, offset: int) -> None:
            super().xWrite(data, offset)
            if self._wal and self._vfs.counting and len(data) in (4096, 8192, 16384, 32768, 65536):
                self._vfs.pages += 1

    return Counting()


def wal_pages_run(system: str) -> float:
    """WAL pages written per append, counted by a VFS over the default one."""
    vfs = wal_counter()

    def start() -> None:
        vfs.counting = True

    bodies = texts(COUNTED_APPENDS)
    with tempfile.TemporaryDirectory() as d:
        if system.startswith("raw"):
            raw_appends(Path(d), bodies, indexed=system == "raw-indexed", vfs=VFS_NAME, before=start)
        else:
            sessiondb_appends(Path(d), bodies, index_each=False, vfs=VFS_NAME, before=start)
    if not vfs.pages:
        raise SystemExit("the counting VFS saw no WAL page written: it does not see the store's WAL")
    return vfs.pages / COUNTED_APPENDS


def batch_run(system: str, bodies: list[str]) -> float:
    """CPU seconds (user + system, every thread) per message of the appends of BATCH after
    the first WARM (`bodies` from the parent: the peer's interpreter has neither APSW nor
    sessiondb). The store is closed before the clock stops: the index catches up by then."""
    batches = [[{"role": ("user", "assistant")[i % 2], "content": t} for i, t in enumerate(bodies[j:j + BATCH])]
               for j in range(0, len(bodies), BATCH)]
    warm, timed = batches[:WARM], batches[WARM:]
    with tempfile.TemporaryDirectory() as d:
        if system == "openai":
            import asyncio
            from agents.memory import SQLiteSession

            async def run() -> float:
                session = SQLiteSession("bench", str(Path(d) / "openai.db"))
                for batch in warm:
                    await session.add_items(batch)
                started = cpu()
                for batch in timed:
                    await session.add_items(batch)
                session.close()
                return cpu() - started
            spent = asyncio.run(run())
        elif system == "raw-indexed":
            spent = _raw_batches(Path(d), warm, timed)
        else:
            import sessiondb
            if system == "sessiondb":
                hold_off_indexer()
            store = sessiondb.open_store(Path(d) / "state.db")
            sid = store.create_session("bench").id
            for batch in warm:
                store.append(sid, batch)
            store._open()._file.indexer.catch_up()
            started = cpu()
            for batch in timed:
                store.append(sid, batch)
            store.close()
            spent = cpu() - started
    return spent / (BATCH * len(timed))


def _raw_connection(path: Path, vfs: str | None = None) -> Any:
    """A plain APSW connection to `path` with the store's durability settings."""
    import apsw
    sys.path.insert(0, str(HERE))
    import bench_core
    conn = apsw.Connection(str(path), **({"vfs": vfs} if vfs else {}))
    bench_core.set_pragmas(conn)
    return conn


def _into_store_schema(path: Path, vfs: str | None = None) -> tuple[Any, str]:
    """(a plain connection to a new store at `path`, with sessiondb's schema and one session;
    that session's id): the raw loops' floor in the store's own layout, its indexer held off."""
    import sessiondb
    hold_off_indexer()
    with sessiondb.open_store(path) as store:
        sid = store.create_session("bench").id
    return _raw_connection(path, vfs), sid


def _raw_batches(directory: Path, warm: list[list[dict[str, str]]], timed: list[list[dict[str, str]]]) -> float:
    """The engine's floor for a batch in sessiondb's layout: each batch's rows (a fresh
    uid each, as the store mints them) inserted by one statement and committed, into the
    store's own schema and indexes, without the session row or any Python of the store.
    CPU seconds of the timed batches."""
    from sessiondb.inputs import new_uid
    conn, sid = _into_store_schema(directory / "raw.db")
    seqs = iter(range(1, 10**9))

    def one(batch: list[dict[str, str]]) -> None:
        values = ", ".join(["(?, ?, ?, ?, ?, ?)"] * len(batch))
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(f"INSERT INTO messages(session_id, uid, seq, role, content, timestamp) VALUES {values}",
                     [v for m in batch for v in (sid, new_uid(), next(seqs), m["role"], m["content"], time.time())])
        conn.execute("COMMIT")

    for batch in warm:
        one(batch)
    started = cpu()
    for batch in timed:
        one(batch)
    conn.close()
    return cpu() - started


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- the parent: runs the children, compares, records ------------------------------------

def child(python: Path | str, *args: str, prefix: tuple[str, ...] = (), given: str | None = None
          ) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, str(python), __file__, "--child", *args], capture_output=True, text=True,
                          check=True, input=given)


def instructions(system: str, n: int) -> int:
    return counted(sys.executable, "count", system, str(n))


def counted(python: Path | str, *args: str, given: str | None = None) -> int:
    """The instructions callgrind counts in the child `args` describe."""
    done = child(python, *args, given=given, prefix=("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"))
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


def figure(name: str, value: float | None, unit: str, target: str | None = None, *, met: bool | None = None,
           **beside: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "value": None if value is None else round(value, 3), "unit": unit}
    if target is not None:
        entry |= {"target": target, "met": met}
    return entry | beside


def measure(rounds: int) -> dict[str, Any]:
    figures = []
    if shutil.which("valgrind"):
        per = {system: (instructions(system, LARGE) - instructions(system, SMALL)) / (LARGE - SMALL)
               for system in COUNTED}
        raw = per["raw"]
        for system, label in COUNTED.items():
            target, met = {
                "acknowledged": ("<= 150000 and <= 3x raw", per[system] <= 150_000 and per[system] <= 3 * raw),
                "indexed": ("<= 300000", per[system] <= 300_000),
            }.get(system, (None, None))
            figures.append(figure(f"instructions per append: {label}", per[system], "instructions", target, met=met,
                                  x_raw=round(per[system] / raw, 2)))
    else:
        figures.append(figure("instructions per append (valgrind is not installed)", None, "instructions"))
    pages = {system: float(child(sys.executable, "wal", system).stdout) for system in ("raw", "raw-indexed",
                                                                                    "acknowledged")}
    for system in ("raw", "raw-indexed", "acknowledged"):
        target = ("<= 2.5", pages[system] <= 2.5) if system == "acknowledged" else (None, None)
        figures.append(figure(f"WAL pages per append to a session of {HISTORY:,}: {COUNTED[system]}", pages[system],
                              "pages", target[0], met=target[1]))
    figures += batch_figures(rounds)
    figures += postgres_figures(rounds)
    return {"command": "make bench-exact", "measured_at": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "figures": figures}


def batch_figures(rounds: int) -> list[dict[str, Any]]:
    """Appends of BATCH: instructions per message (callgrind: BATCHES batches less one,
    after the warm-up, so start-up cancels out) and CPU µs per message (the median of
    `rounds`, the systems alternating), sessiondb's against OpenAI's add_items."""
    batchers = {k: v for k, v in BATCHERS.items() if v[0].exists()}
    bodies = texts(BATCH * (WARM + BATCHES))
    few = json.dumps(bodies[:BATCH * (WARM + 1)])
    many = json.dumps(bodies)
    per: dict[str, float | None] = dict.fromkeys(BATCHERS)
    if shutil.which("valgrind"):
        for system, (python, _) in batchers.items():
            per[system] = ((counted(python, "batch", system, given=many) - counted(python, "batch", system, given=few))
                           / (BATCH * (BATCHES - 1)))
    spent: dict[str, list[float]] = {system: [] for system in batchers}
    for r in range(rounds):
        for system in (list(batchers) if r % 2 == 0 else list(batchers)[::-1]):
            spent[system].append(float(child(batchers[system][0], "batch", system, given=many).stdout) * 1e6)
    cpu_of = {system: statistics.median(runs) for system, runs in spent.items()}
    figures = []
    for system, (_, label) in BATCHERS.items():
        against = "sessiondb" if system == "sessiondb" and "openai" in batchers else None
        figures.append(figure(
            f"instructions per message, appends of {BATCH}: {label}", per[system], "instructions",
            "<= OpenAI add_items" if against and per["openai"] else None,
            met=None if not (against and per["openai"]) else per[system] <= per["openai"]))
        figures.append(figure(
            f"CPU µs per message, appends of {BATCH}: {label}", cpu_of.get(system), "µs",
            "<= OpenAI add_items" if against else None,
            met=None if not against else cpu_of[system] <= cpu_of["openai"],
            rounds=[round(x, 2) for x in spent.get(system, [])],
            **({"version": child(OPENAI_PYTHON, "version").stdout.strip()} if system == "openai" and system in batchers
               else {})))
    return figures


def postgres_figures(rounds: int, count: int = 400) -> list[dict[str, Any]]:
    """One-message appends on a private PostgreSQL server (tests/pgserver.py, fsync and
    synchronous_commit on): the server's CPU per append (the kernel's account of the
    backend processes, /proc/PID/schedstat) and the client's (this process's), sessiondb's
    `append` beside its one statement sent alone (what the store's Python adds is the
    difference) and a raw INSERT into the same schema and indexes, each on one autocommit
    connection, rounds alternating, the median round's."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    import pgserver
    import psycopg

    import sessiondb
    from sessiondb.inputs import prepare_messages
    from sessiondb.model import MessageLimits
    from sessiondb.store.postgres.messages import append_fresh
    try:
        server = pgserver.start_server()
    except pgserver.ServerUnavailable as exc:
        return [figure(f"PostgreSQL server CPU µs per append (no server: {exc})", None, "µs")]
    bodies = texts(count * rounds * 3 + 100)
    spent: dict[str, dict[str, list[float]]] = {name: {"server": [], "client": []}
                                                for name in ("sessiondb", "statement", "raw")}
    try:
        url = server.url()
        watcher = psycopg.connect(url, autocommit=True)
        with sessiondb.open_store(url, schema="exact_store") as store, \
                sessiondb.open_store(url, schema="exact_raw") as raw_store:
            sid = store.create_session("bench").id
            raw_sid = raw_store.create_session("bench").id
            raw = psycopg.connect(url, autocommit=True)
            raw.execute("SET search_path TO exact_raw, sessiondb_extensions")
            # The store's own statement without the store around it: what its Python adds is the difference.
            direct = psycopg.connect(url, autocommit=True)
            direct.execute("SET search_path TO exact_store, sessiondb_extensions")
            limits = MessageLimits()
            insert = ('INSERT INTO messages(session_id, uid, seq, role, content, "timestamp") '
                      "VALUES (%s, %s, %s, 'user', %s, %s)")
            texts_left = iter(bodies)
            seqs = iter(range(1, 10**9))

            def backends() -> float:
                pids = [pid for (pid,) in watcher.execute(
                    "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> "
                    "pg_backend_pid() AND pid <> ALL(%s)", ([raw.info.backend_pid, direct.info.backend_pid],))]
                return sum(int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) for pid in pids) / 1000

            def ours() -> None:
                store.append(sid, {"role": "user", "content": next(texts_left)})

            def statement() -> None:
                batch = prepare_messages([{"role": "user", "content": next(texts_left)}], limits)
                append_fresh(direct, sid, batch, time.time(), "exact_store")

            def theirs() -> None:
                seq = next(seqs)
                raw.execute(insert, (raw_sid, f"u{seq}", seq, next(texts_left), time.time()))

            works = {"sessiondb": (ours, backends), "statement": (statement, lambda: _backend_cpu(direct)),
                     "raw": (theirs, lambda: _backend_cpu(raw))}
            for work, _ in works.values():  # prepared statements and plans, before any count
                for _ in range(20):
                    work()
            for r in range(rounds):
                for name in list(works)[::1 if r % 2 == 0 else -1]:
                    work, server_clock = works[name]
                    server_cpu, client_cpu = server_clock(), cpu()
                    for _ in range(count):
                        work()
                    spent[name]["client"].append((cpu() - client_cpu) * 1e6 / count)
                    spent[name]["server"].append((server_clock() - server_cpu) / count)
            raw.close()
            direct.close()
        watcher.close()
    finally:
        server.destroy()
    median = {name: {side: statistics.median(runs) for side, runs in sides.items()} for name, sides in spent.items()}
    figures = []
    for side, wanted in (("server", 1.3), ("client", 1.2)):
        ratio = median["sessiondb"][side] / median["raw"][side]
        figures.append(figure(f"PostgreSQL {side} CPU µs per append: sessiondb.append", median["sessiondb"][side], "µs",
                              f"<= {wanted}x raw INSERT", met=ratio <= wanted, x_raw=round(ratio, 2),
                              rounds=[round(x, 1) for x in spent["sessiondb"][side]]))
        figures.append(figure(f"PostgreSQL {side} CPU µs per append: the store's statement alone (append_fresh on one "
                              "connection, its message prepared)", median["statement"][side], "µs",
                              x_raw=round(median["statement"][side] / median["raw"][side], 2),
                              rounds=[round(x, 1) for x in spent["statement"][side]]))
        figures.append(figure(f"PostgreSQL {side} CPU µs per append: raw INSERT into sessiondb's schema, psycopg",
                              median["raw"][side], "µs", rounds=[round(x, 1) for x in spent["raw"][side]]))
    return figures


def _backend_cpu(conn: Any) -> float:
    return int(Path(f"/proc/{conn.info.backend_pid}/schedstat").read_text().split()[0]) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print, leaving docs/benchmarks.json as it is")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind == "count":
            counted_run(rest[0], int(rest[1]))
        elif kind == "wal":
            print(wal_pages_run(rest[0]))
        elif kind == "batch":
            print(batch_run(rest[0], json.loads(sys.stdin.read())))
        else:
            from importlib import metadata
            print(metadata.version("openai-agents"))
        return
    exact = measure(args.rounds)
    for entry in exact["figures"]:
        met = "" if "met" not in entry else ("  met" if entry["met"] else "  MISSED")
        value = "n/a" if entry["value"] is None else f"{entry['value']:,.2f}"
        print(f"{value:>12} {entry['unit']:<12} {entry['name']}"
              f"{'  (target ' + entry['target'] + ')' if 'target' in entry else ''}{met}")
    if not args.no_write:
        path = DOCS / "benchmarks.json"
        results = json.loads(path.read_text())
        results["exact"] = exact
        path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
