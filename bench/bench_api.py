"""HTTP throughput of `sessiondb serve`: requests per second with 16 concurrent clients.

    make bench-api          (or: python bench/bench_api.py --clients 16 --seconds 5)

Starts `sessiondb serve` in a subprocess on a free loopback port with a throw-away home
holding `--sessions` sessions, then for `--seconds` each runs two workloads with
`--clients` concurrent clients (one httpx.AsyncClient connection each, keep-alive):

- list: `GET /api/sessions?limit=50` (the dashboard's sidebar page);
- post: `POST /api/sessions/{id}/append` with one new message (a user turn), each
  client writing to its own session; every request is a durable append (synchronous=FULL).

Reports requests/s and p50/p99 latency per workload. Only loopback traffic; bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

import sessiondb


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seed(home: Path, sessions: int) -> list[str]:
    with sessiondb.open_store(home=home) as store:
        ids = []
        for i in range(sessions):
            s = store.create_session("bench", title=f"bench session {i}")
            ids.append(s.id)
        for sid in ids[:200]:
            store.append(sid, [{"uid": f"seed-{j}", "role": "user" if j % 2 == 0 else "assistant",
                                "content": f"seed message {j} about kyoto temples and flaky tests"} for j in range(10)])
    return ids


def serve(home: Path, port: int) -> subprocess.Popen:
    command = [sys.executable, "-c", "from sessiondb.cli import main; main()", "--home", str(home),
               "serve", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("sessiondb serve did not start")


async def run(url: str, clients: int, seconds: float, request) -> tuple[int, list[float], int]:
    latencies: list[float] = []
    failures = 0
    stop = time.perf_counter() + seconds

    async def client(n: int) -> None:
        nonlocal failures
        async with httpx.AsyncClient(base_url=url, timeout=30,
                                     limits=httpx.Limits(max_connections=1)) as http:
            i = 0
            while time.perf_counter() < stop:
                t0 = time.perf_counter()
                response = await request(http, n, i)
                latencies.append(time.perf_counter() - t0)
                if response.status_code >= 300:
                    failures += 1
                i += 1

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return len(latencies), latencies, failures, time.perf_counter() - started


def report(name: str, count: int, latencies: list[float], failures: int, elapsed: float) -> None:
    latencies.sort()
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(f"{name:<6} {count / elapsed:9.0f} req/s   p50 {p50:6.1f} ms   p99 {p99:6.1f} ms   "
          f"({count} requests, {failures} failed)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sessiondb-bench-api-") as tmp:
        home = Path(tmp) / "home"
        ids = seed(home, args.sessions)
        port = free_port()
        process = serve(home, port)
        url = f"http://127.0.0.1:{port}"
        try:
            print(f"sessiondb serve on {url}: {args.sessions} sessions, {args.clients} concurrent clients, "
                  f"{args.seconds:g} s per workload, {os.cpu_count()} CPUs")

            async def listing(http, n, i):
                return await http.get("/api/sessions", params={"limit": 50})

            async def posting(http, n, i):
                return await http.post(f"/api/sessions/{ids[n]}/append", json={
                    "messages": [{"uid": f"bench-{n}-{i}", "role": "user", "content": f"message {i} from client {n}"}]})

            for name, request in (("list", listing), ("post", posting)):
                asyncio.run(run(url, args.clients, 0.5, request))  # warm up
                report(name, *asyncio.run(run(url, args.clients, args.seconds, request)))
        finally:
            process.terminate()
            process.wait(10)


if __name__ == "__main__":
    main()
