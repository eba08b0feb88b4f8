"""Searches from a streaming replica under an append load on the primary (docs/fleet.md).

    .venv/bin/python bench/bench_replicas.py [--messages 20000] [--searches 300] [--writers 2]

A server and a hot standby following it (tests/pgserver.py: start_server, start_replica),
a store of `--messages` messages, and `--writers` processes appending one message at a
time to the primary throughout. Meanwhile one process searches one session for a word,
taking turns between three handles: one opened without replicas (the primary answers), one with the
replica that never writes (the replica answers), and one with the replica that appends a
message to that session before each search (it reads its own writes:
the replica answers once it has replayed the append, or the primary after REPLAY_WAIT;
counted from the sessiondb.replica_reads metric). Printed: the p50 and p99 of each, how
often the writing handle found its newest message and who answered, and the appends the
writers made meanwhile; and, for the two handles that do not write, a search of the whole
store for a word one message in eight holds. Needs the otel extra.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import sessiondb  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402  (the otel extra)
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from pgserver import start_replica, start_server  # noqa: E402
from sessiondb import telemetry  # noqa: E402

SCHEMA = "bench_replicas"
WORDS = ("castle", "river", "shrine", "meadow", "harbour", "lantern", "orchard", "glacier")


def write(url: str, stop: multiprocessing.Event, made: multiprocessing.Value) -> None:
    with sessiondb.open_store(url, schema=SCHEMA) as store:
        sid = store.create_session("bench").id
        n = 0
        while not stop.is_set():
            store.append(sid, [{"role": "user", "content": f"the {WORDS[n % len(WORDS)]} number {n} by the hill"}])
            n += 1
        with made.get_lock():
            made.value += n


def served_by_primary(reader: InMemoryMetricReader) -> int:
    """The reads a store with replicas left to the primary so far (sessiondb.replica_reads)."""
    data = reader.get_metrics_data()
    return sum(int(point.value) for resource in (data.resource_metrics if data else [])
               for scope in resource.scope_metrics for metric in scope.metrics
               if metric.name == "sessiondb.replica_reads" for point in metric.data.data_points
               if point.attributes.get("sessiondb.served_by") == "primary")


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[int(share * (len(ordered) - 1))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--writers", type=int, default=2)
    options = parser.parse_args()
    reader = InMemoryMetricReader()
    telemetry.instrument(meter_provider=MeterProvider(metric_readers=[reader]))
    primary = start_server()
    replica = start_replica(primary)
    try:
        with sessiondb.open_store(primary.url(), schema=SCHEMA) as store:
            sid = store.create_session("bench").id
            for start in range(0, options.messages, 1000):
                store.append(sid, [{"role": "user", "content": f"a {WORDS[n % len(WORDS)]} seen on day {n}"}
                                   for n in range(start, min(start + 1000, options.messages))])
        stop, made = multiprocessing.Event(), multiprocessing.Value("i", 0)
        writers = [multiprocessing.Process(target=write, args=(primary.url(), stop, made))
                   for _ in range(options.writers)]
        for w in writers:
            w.start()
        handles = {
            "primary (no replicas)": sessiondb.open_store(primary.url(), schema=SCHEMA),
            "replica, a reading handle": sessiondb.open_store(primary.url(), schema=SCHEMA, replicas=[replica.url()]),
            "replica, a writing handle": sessiondb.open_store(primary.url(), schema=SCHEMA, replicas=[replica.url()]),
        }
        own = handles["replica, a writing handle"].create_session("bench").id
        times: dict[str, list[float]] = {name: [] for name in handles}
        whole: dict[str, list[float]] = {name: [] for name in handles if not name.endswith("writing handle")}
        found_own = on_primary = 0
        for n in range(options.searches):
            for name, store in handles.items():
                writing = name.endswith("writing handle")
                if writing:
                    store.append(own, [{"uid": f"own-{n}", "role": "user", "content": f"my lantern {n}"}])
                    before = served_by_primary(reader)
                started = time.perf_counter()
                hits = store.search("lantern", session_id=own, limit=1)
                times[name].append(time.perf_counter() - started)
                if writing:
                    found_own += [h.uid for h in hits] == [f"own-{n}"]  # its newest, from wherever answered
                    on_primary += served_by_primary(reader) > before
                else:
                    started = time.perf_counter()
                    store.search("castle", limit=10)  # a word in one message of eight, in the whole store
                    whole[name].append(time.perf_counter() - started)
        stop.set()
        for w in writers:
            w.join()
        print(f"{options.messages:,} messages, {options.writers} writer processes appending "
              f"({made.value:,} appends during the searches), {options.searches} searches per handle")
        for label, measured in (("one session", times), ("the whole store", whole)):
            for name, taken in measured.items():
                print(f"  {label:<16} {name:<28} p50 {statistics.median(taken) * 1000:6.2f} ms   "
                      f"p99 {percentile(taken, 0.99):7.2f} ms")
        print(f"  the writing handle found its own newest message {found_own}/{options.searches} times; "
              f"the replica answered {options.searches - on_primary}, the primary {on_primary}")
        for store in handles.values():
            store.close()
    finally:
        replica.destroy()
        primary.destroy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
