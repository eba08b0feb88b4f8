"""A stateful model of compaction and lineage, checked against a real store of each backend.

Hypothesis interleaves appends from two logical writers (also truly at once, from two
threads), re-flushes of stored messages, compactions begun, committed in place or by
rotation, aborted, refreshed and expired, late writes to rotated parents, rewinds and
restores, and reopening the store. After every step, each acknowledged message exists
exactly once across the lineage, in the order the model expects, with the state it
expects, every session's counters agree with its rows, and verify() finds nothing wrong.
"""

from __future__ import annotations

import itertools
import threading

import pytest
from hypothesis import HealthCheck, event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from sessiondb import CompactionBusy, LeaseLost

TTL = 100.0
#: Examples per run, by backend. A step on a server costs some 70 round trips to it (the
#: invariant reads every session, its export, the resume and verify() after every step),
#: three times a step on a file, so the default run takes fewer examples there; the long
#: tier (`-m long`) runs 300 on each backend.
EXAMPLES = {"postgresql": 35, "pgbouncer": 35}  # a server's round trips cost more; every other backend: 100
LONG_EXAMPLES = 300


def run_model(open_backend, clock, examples: int) -> None:
    names = (f"model-{n}" for n in itertools.count())  # a fresh store for every example
    run_state_machine_as_test(lambda: LineageMachine(open_backend, next(names), clock), settings=settings(
        max_examples=examples, stateful_step_count=40, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))


def payload(uid: str) -> dict:
    if uid.startswith("S"):
        return {"uid": uid, "role": "system", "content": f"summary {uid}"}
    role = "user" if sum(map(ord, uid)) % 2 else "assistant"
    return {"uid": uid, "role": role, "content": f"text of {uid}"}


class LineageMachine(RuleBasedStateMachine):
    def __init__(self, open_backend, name: str, clock) -> None:
        super().__init__()
        self.open = lambda: open_backend(name, durability="normal", clock=clock)
        self.clock = clock
        self.store = self.open()
        self.sessions = [self.store.create_session("model", title="model").id]  # root .. tip
        self.entries: list[list[str]] = []  # [uid, state] across the lineage, in order
        self.tip_start = 0  # where the tip session's rows begin in `entries`
        self.lease = None
        self.mark = 0  # len(entries) when the lease was taken
        self.counters = {"A": 0, "B": 0}
        self.summaries = 0

    def teardown(self) -> None:
        self.store.close()

    # --- helpers ---------------------------------------------------------------------------

    @property
    def tip(self) -> str:
        return self.sessions[-1]

    def new_uids(self, writer: str, n: int) -> list[str]:
        start = self.counters[writer]
        self.counters[writer] += n
        return [f"{writer}{start + i}" for i in range(n)]

    def tip_entries(self) -> list[list[str]]:
        return self.entries[self.tip_start:]

    def message_id(self, uid: str) -> int:
        [found] = [m["id"] for m in self.raw(self.tip) if m["uid"] == uid]
        return found

    def lease_live(self) -> bool:
        return self.lease is not None and self.lease.expires_at > self.clock.now

    # --- appends ------------------------------------------------------------------------------

    @rule(writer=st.sampled_from("AB"), n=st.integers(1, 3), via=st.integers(0, 10))
    def append(self, writer, n, via):
        # `via` picks the session the writer still knows: often the tip, sometimes a rotated
        # parent (a late write, S-05).
        target = self.sessions[min(via, len(self.sessions) - 1)] if via < 3 else self.tip
        if target != self.tip:
            event("late write to a rotated session")
        uids = self.new_uids(writer, n)
        rows = self.store.append(target, [payload(u) for u in uids])
        assert [(m.uid, m.session_id, m.state) for m in rows] == [(u, self.tip, "active") for u in uids]
        self.entries.extend([u, "active"] for u in uids)

    @rule(n=st.integers(1, 3))
    def append_from_two_threads_at_once(self, n):
        batches = {w: self.new_uids(w, n) for w in "AB"}
        barrier = threading.Barrier(2)
        errors = []

        def write(w):
            try:
                barrier.wait()
                self.store.append(self.tip, [payload(u) for u in batches[w]])
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in "AB"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors
        # Each batch is atomic and contiguous; which went first is the store's to say.
        stored = [m["uid"] for m in self.raw(self.tip)][-2 * n:]
        assert stored in (batches["A"] + batches["B"], batches["B"] + batches["A"])
        self.entries.extend([u, "active"] for u in stored)

    @rule(data=st.data())
    @precondition(lambda self: self.entries)
    def reflush(self, data):
        # An agent hands stored messages back (after a compaction, a retry, a resume): no-op.
        picked = data.draw(st.lists(st.sampled_from([u for u, _ in self.entries]), min_size=1, max_size=4))
        via = data.draw(st.sampled_from(self.sessions))
        self.store.append(via, [payload(u) for u in picked])

    # --- compaction -------------------------------------------------------------------------------

    @rule()
    @precondition(lambda self: self.lease is None)
    def begin(self):
        self.lease = self.store.begin_compaction(self.sessions[0], ttl=TTL)  # followed to the tip
        assert self.lease.session_id == self.tip
        self.mark = len(self.entries)

    @rule()
    @precondition(lambda self: self.lease_live())
    def second_compaction_is_refused(self):
        try:
            self.store.begin_compaction(self.tip)
        except CompactionBusy:
            return
        raise AssertionError("a second live lease was handed out")

    @rule(mode=st.sampled_from(["in_place", "rotate"]), keep=st.integers(0, 2))
    @precondition(lambda self: self.lease is not None)
    def commit(self, mode, keep):
        self.summaries += 1
        summary_uid = f"S{self.summaries}"
        head, tail = self.entries[:self.mark], self.entries[self.mark:]
        # Keep up to `keep` of the newest active tip messages at or below the watermark verbatim.
        candidates = [e for e in head[self.tip_start:] if e[1] == "active"]
        kept = candidates[len(candidates) - keep:] if keep else []
        try:
            live = self.store.commit_compaction(
                self.lease, [payload(summary_uid)] + [payload(u) for u, _ in kept], mode=mode)
        except LeaseLost:
            assert not self.lease_live()
            self.lease = None
            self.summaries -= 1
            return
        assert self.lease_live()
        self.lease = None
        kept_uids = {u for u, _ in kept}
        prefix, archived = head[:self.tip_start], head[self.tip_start:]
        archived = [[u, "compacted" if s == "active" else s] for u, s in archived if u not in kept_uids]
        new_head = prefix + archived
        self.entries = new_head + [[summary_uid, "active"]] + [list(e) for e in kept] + tail
        if mode == "rotate":
            self.sessions.append(live.id)
            self.tip_start = len(new_head)
        assert live.id == self.tip
        event(f"committed {mode}, kept {len(kept)}, tail {len(tail)}, lineage {len(self.sessions)}")

    @rule()
    @precondition(lambda self: self.lease is not None)
    def abort(self):
        self.store.abort_compaction(self.lease)
        self.lease = None

    @rule()
    @precondition(lambda self: self.lease is not None)
    def expire(self):
        self.clock.now += TTL + 1

    @rule()
    @precondition(lambda self: self.lease is not None and not self.lease_live())
    def take_over_an_expired_lease(self):
        stale = self.lease
        self.lease = self.store.begin_compaction(self.tip, ttl=TTL)
        assert self.lease.token > stale.token
        self.mark = len(self.entries)
        try:
            self.store.commit_compaction(stale, [payload("S-stale")], mode="rotate")
        except LeaseLost:
            return
        raise AssertionError("a stale lease published a compaction")

    @rule()
    @precondition(lambda self: self.lease_live())
    def refresh(self):
        self.clock.now += TTL / 2
        self.lease = self.store.refresh_compaction(self.lease)

    # --- rewind, restore, reopen ----------------------------------------------------------------------

    @rule(data=st.data())
    def rewind(self, data):
        tip_rows = self.tip_entries()
        index = data.draw(st.integers(-1, len(tip_rows) - 1))
        to = 0 if index < 0 else self.message_id(tip_rows[index][0])
        changed = self.store.rewind(self.tip, to)
        after = tip_rows[index + 1:]
        assert changed == sum(1 for e in after if e[1] == "active")
        for e in after:
            if e[1] == "active":
                e[1] = "rewound"

    @rule()
    def restore(self):
        changed = self.store.restore_rewound(self.tip)
        rewound = [e for e in self.tip_entries() if e[1] == "rewound"]
        assert changed == len(rewound)
        for e in rewound:
            e[1] = "active"

    @rule()
    def reopen(self):
        self.store.close()
        self.store = self.open()

    # --- the invariant ---------------------------------------------------------------------------------

    def raw(self, session_id):
        """Every row of the session in every state, in commit order (the export's records)."""
        return [r["message"] for r in self.store.export([session_id]) if r["type"] == "message"]

    @invariant()
    def every_acknowledged_message_exists_once_in_order_with_its_state(self):
        chain = self.store.lineage(self.sessions[0])
        assert [s.id for s in chain] == self.sessions
        assert self.store.tip(self.sessions[0]).id == self.tip
        stored = []
        for s in chain:
            rows = self.raw(s.id)
            stored += [[m["uid"], m["state"]] for m in rows]
            active = [m for m in rows if m["state"] == "active"]
            assert s.message_count == len(active)
            assert s.end_reason == ("compression" if s.id != self.tip else None)
        assert stored == self.entries
        uids = [u for u, _ in stored]
        assert len(uids) == len(set(uids))
        live = [e[0] for e in self.tip_entries() if e[1] == "active"]
        assert [m["content"] for m in self.store.resume(self.sessions[0])] == [payload(u)["content"] for u in live]
        report = self.store.verify()
        assert report.ok and report.notes == [], report.problems


def test_the_lineage_model_holds_on_the_store(open_backend, clock, backend):
    run_model(open_backend, clock, EXAMPLES.get(backend, 100))


@pytest.mark.long
def test_the_lineage_model_holds_on_the_store_at_length(open_backend, clock):
    run_model(open_backend, clock, LONG_EXAMPLES)
