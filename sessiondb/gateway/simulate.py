"""A load generator that doubles as the gateway's demo: a busy messaging fleet.

`run` drives a Gateway over several profiles: DMs (whose peer ids are shared across
profiles, as a DM chat id is the same for every bot) and groups with threads; turns of a
user message and an assistant reply, a few internal notifications, compactions in place
and by rotation, a graceful restart half way, one profile whose home only appears after
a third of the traffic (its first messages wait in the spool), and a stretch during which
another process holds the write lock of a second profile's store (its messages are
spooled, and replayed in order once the lock is released). Every message says
which key it belongs to, so `verify` can count each one in exactly one store: its owner's.

With `kill_after`, the traffic runs in a child process killed with SIGKILL after that
many seconds; the parent then restarts the gateway, recovers, and verifies that every
message the child saw acknowledged, stored at once or spooled, is stored.
"""

from __future__ import annotations

import json
import logging
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from .. import keys, open_store
from ..home import DEFAULT_PROFILE, profile_dir, resolve_home
from .gateway import Gateway

TAG = "[{key}] "


@dataclass
class Plan:
    home: str
    profiles: int = 3
    chats: int = 50
    messages: int = 5000
    seed: int = 7
    durability: str = "full"
    compact_every: int = 400  # messages between compactions
    restart_at: float = 0.5  # fraction of the traffic after which the gateway restarts
    late_at: float = 0.33  # fraction after which the last profile's home appears
    busy_from: float = 0.6  # fractions between which another process holds fleet-1's write lock
    busy_until: float = 0.75
    patience: float = 0.2  # how long a write waits for that lock before its messages queue


@dataclass
class Figures:
    acknowledged: int = 0  # messages stored at once
    deferred: int = 0  # messages spooled first, to wait for their store
    internal: int = 0
    turns: int = 0
    compactions: int = 0
    spool_files: int = 0  # spool files written, one per deferred append
    busy_seconds: float = 0.0  # how long fleet-1's store was locked by another process
    restarts: int = 0
    seconds: float = 0.0
    recovery: list[dict[str, Any]] = field(default_factory=list)


def profile_names(n: int) -> list[str]:
    return [DEFAULT_PROFILE] + [f"fleet-{i}" for i in range(1, max(1, n))]


def chat_keys(plan: Plan) -> list[str]:
    names = profile_names(plan.profiles)
    out = []
    for i in range(plan.chats):
        profile = names[(i // 3) % len(names)]
        if i % 3 == 2:
            out.append(keys.build(profile, "slack", "group", f"C{i:03d}", f"T{i % 4}"))
        elif i % 3 == 1:
            out.append(keys.build(profile, "telegram", "group", f"-100{i}"))
        else:  # DMs: the peer id repeats across profiles (S-36)
            out.append(keys.build(profile, "telegram", "dm", f"user{i // (3 * len(names))}"))
    return out


def run(plan: Plan, progress: Callable[[Figures], None] | None = None) -> Figures:
    home = resolve_home(plan.home)
    names = profile_names(plan.profiles)
    late = names[-1] if len(names) > 1 else None
    for name in names:
        if name not in (DEFAULT_PROFILE, late):
            open_store(home=home, profile=name, durability=plan.durability).close()
    rng = random.Random(plan.seed)
    chats = chat_keys(plan)
    figures = Figures()
    started = time.monotonic()
    gw = Gateway(home, durability=plan.durability, retry_interval=0.25, patience=plan.patience)
    figures.recovery.append(gw.recover().to_dict())
    busy = names[1] if len(names) > 2 else None
    holder: LockHolder | None = None
    n = 0
    try:
        while n < plan.messages:
            if busy and holder is None and not figures.busy_seconds and n >= plan.busy_from * plan.messages:
                holder = LockHolder(profile_dir(home, busy) / "state.db")
            if holder is not None and n >= plan.busy_until * plan.messages:
                figures.busy_seconds = holder.release()
                holder = None
            if late and n >= plan.late_at * plan.messages and not profile_dir(home, late).exists():
                open_store(home=home, profile=late, durability=plan.durability).close()
            if figures.restarts == 0 and n >= plan.restart_at * plan.messages:
                gw.close()
                gw = Gateway(home, durability=plan.durability, retry_interval=0.25, patience=plan.patience)
                figures.recovery.append(gw.recover().to_dict())
                figures.restarts += 1
            key = rng.choice(chats)
            tag = TAG.format(key=key)
            if rng.random() < 0.05 or n + 2 > plan.messages:
                _count(figures, gw.append(key, {"role": "user", "content": f"{tag}reminder fired #{n}"},
                                          internal=True))
                figures.internal += 1
                n += 1
                continue
            started_turn = _try(lambda: gw.turn_started(key))
            batch = [{"role": "user", "content": f"{tag}question #{n}"},
                     {"role": "assistant", "content": f"{tag}answer #{n + 1}"}]
            _count(figures, gw.append(key, batch[:1]))
            _count(figures, gw.append(key, batch[1:]))
            if started_turn:
                gw.turn_finished(key)
            figures.turns += 1
            n += 2
            if n % plan.compact_every < 2:
                figures.compactions += _compact(gw, rng.choice(chats), rotate=rng.random() < 0.5)
            if progress is not None and n % 100 < 2:
                figures.seconds = time.monotonic() - started
                progress(figures)
        if holder is not None:
            figures.busy_seconds = holder.release()
            holder = None
        gw.flush_all()
    finally:
        if holder is not None:
            holder.release()
        gw.close()
    figures.seconds = time.monotonic() - started
    return figures


_HOLDER = (
    "import sys, apsw\n"
    "conn = apsw.Connection(sys.argv[1])\n"
    "conn.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.readline()\n"
    "conn.execute('ROLLBACK')\n"
)


class LockHolder:
    """Another process holding a store's write lock, as a busy CLI or desktop app would."""

    def __init__(self, db: Path) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        if self.proc.stdout.readline().strip() != "locked":
            self.proc.kill()
            raise RuntimeError("the lock holder could not lock the store")

    def release(self) -> float:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        return time.monotonic() - self.started


def _count(figures: Figures, result) -> None:
    figures.acknowledged += len(result.stored)
    figures.deferred += result.queued
    figures.spool_files += result.spooled_to is not None


def _try(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception:  # noqa: BLE001 - an owner without a store: the turn runs unrecorded
        return None


def _compact(gw: Gateway, key: str, *, rotate: bool) -> int:
    try:
        typed = keys.parse(key)
        store = gw.owners.resolve(typed)
        session = gw.session_for(typed)
        if session.message_count < 6:
            return 0
        lease = store.begin_compaction(session.id, holder="simulate")
        store.commit_compaction(lease, [{"role": "system", "content": f"summary of {session.message_count} messages"}],
                                mode="rotate" if rotate else "in_place")
        return 1
    except Exception:  # noqa: BLE001 - a store still unavailable: no compaction this time
        return 0


def verify(home: str | Path, plan: Plan) -> dict[str, Any]:
    """Count every tagged message in every store: where it is, and whether that is its owner's."""
    home = resolve_home(home)
    per_profile: dict[str, int] = {}
    misplaced = 0
    duplicates = 0
    for name in profile_names(plan.profiles):
        if name != DEFAULT_PROFILE and not profile_dir(home, name).exists():
            continue
        seen: set[str] = set()
        with open_store(home=home, profile=name) as store:
            for record in store.export():
                if record.get("type") != "message":
                    continue
                text = record["message"]["content"] or ""
                if not text.startswith("[agent:"):
                    continue  # compaction summaries
                key = text[1:text.index("] ")]
                owner = keys.parse(key).profile
                if owner != name:
                    misplaced += 1
                body = text
                duplicates += body in seen
                seen.add(body)
                per_profile[name] = per_profile.get(name, 0) + 1
    return {"stored": per_profile, "total": sum(per_profile.values()), "misplaced": misplaced,
            "duplicates": duplicates}


def account(home: str | Path, plan: Plan, figures: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`verify`, plus the messages still waiting in the spool and those lost; and the status.

    Every message acknowledged, stored at once or spooled (S-39), is stored or still in the
    spool (its profile's home may not exist yet); after a kill, the child's last report is a
    floor of what it acknowledged."""
    checked = verify(home, plan)
    with Gateway(home, retry_interval=3600) as gw:
        state = gw.status()
    floor = figures.get("acknowledged", 0) + figures.get("deferred", 0)
    checked["waiting"] = sum(p.get("spooled", 0) for p in state["profiles"].values())
    checked["lost"] = max(0, floor - checked["total"] - checked["waiting"])
    return checked, state


def run_killed(plan: Plan, kill_after: float) -> tuple[dict[str, Any], dict[str, Any], "Figures | None"]:
    """Run the traffic in a child killed with SIGKILL after `kill_after` seconds, then recover.

    Returns the child's last progress figures, the recovery report and, if the child
    finished before the kill, its final figures.
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                     os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-m", "sessiondb.gateway.simulate", json.dumps(asdict(plan))],
                             stdout=subprocess.PIPE, text=True, env=env)
    last: dict[str, Any] = {}
    deadline = time.monotonic() + kill_after
    sel = selectors.DefaultSelector()
    sel.register(child.stdout, selectors.EVENT_READ)
    finished = None
    while time.monotonic() < deadline and child.poll() is None:
        if sel.select(timeout=max(0.0, min(0.1, deadline - time.monotonic()))):
            line = child.stdout.readline()
            if line:
                data = json.loads(line)
                if data.get("done"):
                    finished = data
                last = data
    if child.poll() is None:
        child.send_signal(signal.SIGKILL)
    child.wait()
    for line in child.stdout:  # anything printed before it died
        if line.strip():
            last = json.loads(line)
    with Gateway(plan.home, durability=plan.durability) as gw:
        report = gw.recover().to_dict()
    return last, report, finished


def _child(argv: list[str]) -> None:
    plan = Plan(**json.loads(argv[0]))
    quiet = logging.getLogger("sessiondb.gateway")  # the parent reports; the child keeps stderr for crashes
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False

    def progress(f: Figures) -> None:
        print(json.dumps(asdict(f)), flush=True)

    figures = run(plan, progress)
    print(json.dumps({**asdict(figures), "done": True}), flush=True)


if __name__ == "__main__":
    _child(sys.argv[1:])
