"""How many of sessiondb's files a public call crosses, from the call to the disk.

A module should hold a whole concept; a call that wanders through many files is a
concept cut into steps. This follows four calls on a warm SQLite store (the second call
of each, so first-use imports and migrations are not counted) and prints, for each, the
sessiondb files it ran code in and the file-to-file hops between them:

    .venv/bin/python bench/rooms.py            # a table
    .venv/bin/python bench/rooms.py --files    # and each call's files

The calling thread is followed, and the threads started during the call (the adapter's
store work runs on its event loop's executor); the SQLite writer runs a lone request on
the thread that asked (store/sqlite/writer.py), so an append's whole path is followed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

import sessiondb

PACKAGE = Path(sessiondb.__file__).resolve().parent


def rooms(call: Callable[[], Any]) -> tuple[list[str], int]:
    """(the sessiondb files `call` ran code in, in first-entered order; the hops between files)."""
    seen: list[str] = []
    hops = 0
    last: str | None = None

    def profile(frame: Any, event: str, _arg: Any) -> None:
        nonlocal hops, last
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(str(PACKAGE)):
            return
        name = str(Path(path).relative_to(PACKAGE))
        if name not in seen:
            seen.append(name)
        if last is not None and name != last:
            hops += 1
        last = name

    sys.setprofile(profile)
    threading.setprofile(profile)  # an adapter's store work runs on an executor's new thread
    try:
        call()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
    return seen, hops


def measure(folder: Path) -> dict[str, tuple[list[str], int]]:
    """Each of the four calls, measured on its second run."""
    from agents import SQLiteSession  # noqa: F401  (the SDK must be importable for the adapter)
    from sessiondb.adapters.openai_agents import SessiondbSession
    from sessiondb.gateway import Gateway

    store = sessiondb.open_store(location=folder / "rooms.db")
    session = store.create_session(source="cli")
    counter = iter(range(10**6))

    def append() -> None:
        store.append(session.id, [{"role": "user", "content": f"hello {next(counter)}"}])

    def search() -> None:
        store.search("hello")

    gateway = Gateway(folder / "home")

    def gateway_append() -> None:
        gateway.append("agent:main:cli:dm:rooms", [{"role": "user", "content": f"hi {next(counter)}"}])

    agents = SessiondbSession("rooms", store=store)

    def add_items() -> None:
        asyncio.run(agents.add_items([{"role": "user", "content": f"item {next(counter)}"}]))

    calls = {"append": append, "search": search, "gateway append by key": gateway_append,
             "Agents add_items": add_items}
    found = {}
    for name, call in calls.items():
        call()
        found[name] = rooms(call)
    gateway.close()
    store.close()
    return found


class Counting:
    """A store that counts the public calls made on it (the methods' names, in order)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.made: list[str] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._store, name)
        if name.startswith("_") or not callable(found):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.made.append(name)
            return found(*args, **kwargs)
        return counted


def store_calls(folder: Path) -> list[str]:
    """The Store methods the Agents adapter's add_items calls, on its second run."""
    from sessiondb.adapters.openai_agents import SessiondbSession

    store = sessiondb.open_store(location=folder / "calls.db")
    counting = Counting(store)
    agents = SessiondbSession("calls", store=counting)
    asyncio.run(agents.add_items([{"role": "user", "content": "first"}]))
    counting.made.clear()
    asyncio.run(agents.add_items([{"role": "user", "content": "second"}]))
    store.close()
    return counting.made


def gateway_store_calls(folder: Path) -> list[str]:
    """The Store methods a gateway append by key calls, on the key's second batch."""
    from sessiondb.gateway import Gateway
    from sessiondb.keys import as_key

    key = "agent:main:cli:dm:calls"
    with Gateway(folder / "calls-home") as gateway:
        gateway.append(key, [{"role": "user", "content": "first"}])
        counting = Counting(gateway.owners.resolve(as_key(key)))
        gateway.owners.resolve = lambda _key: counting  # type: ignore[method-assign]
        gateway.append(key, [{"role": "user", "content": "second"}])
    return counting.made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="list each call's files")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        found = measure(Path(folder))
        calls = store_calls(Path(folder))
        gateway_calls = gateway_store_calls(Path(folder))
    print(f"{'call':<24} {'files':>5} {'hops':>5}")
    for name, (files, hops) in found.items():
        print(f"{name:<24} {len(files):>5} {hops:>5}")
        if options.files:
            for f in files:
                print(f"    {f}")
    print(f"Agents add_items makes {len(calls)} store call(s): {', '.join(calls)}")
    print(f"gateway append by key makes {len(gateway_calls)} store call(s): {', '.join(gateway_calls)}")


if __name__ == "__main__":
    main()
