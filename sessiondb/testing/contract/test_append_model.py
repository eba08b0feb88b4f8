"""A stateful model of appends: random sequences of sessions, batches (fresh uids, resent
uids, conflicting uids), reopens and deletes, checked after every step against a plain
Python model of what each transcript must hold."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule, run_state_machine_as_test,
)

import sessiondb
from sessiondb import MessageConflict, NotFound
from sessiondb.testing import SERVERS

ROLES = ("system", "user", "assistant", "tool")

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
contents = st.one_of(
    texts,
    st.none(),
    st.lists(st.one_of(texts, st.fixed_dictionaries({"type": st.just("text"), "text": texts})), max_size=3),
)
tool_calls = st.one_of(st.none(), st.lists(st.fixed_dictionaries({"id": st.text(max_size=4)}), min_size=1, max_size=3))


@st.composite
def payloads(draw):
    return {"role": draw(st.sampled_from(ROLES)), "content": draw(contents), "tool_calls": draw(tool_calls)}


# One entry of a batch: a fresh message, a resend of a stored one (same payload), or a
# stored uid with a different payload (a conflict).
entries = st.one_of(
    st.tuples(st.just("fresh"), payloads()),
    st.tuples(st.just("resend"), st.integers(min_value=0)),
    st.tuples(st.just("conflict"), st.integers(min_value=0)),
)


@dataclass
class ModelSession:
    uids: list[str] = field(default_factory=list)
    payloads: dict[str, dict] = field(default_factory=dict)

    def tool_call_count(self):
        return sum(len(self.payloads[u]["tool_calls"] or ()) for u in self.uids)


def _changed(payload):
    """A payload that differs from `payload` in what was said."""
    content = payload["content"]
    different = (content + "!") if isinstance(content, str) else "changed"
    return {**payload, "content": different}


def make_machine(open_store):
    class AppendModel(RuleBasedStateMachine):
        sessions = Bundle("sessions")

        def __init__(self):
            super().__init__()
            self.store = open_store()
            self.model: dict[str, ModelSession] = {}
            self.deleted: set[str] = set()
            self.counter = itertools.count()

        def teardown(self):
            self.store.close()

        @initialize(target=sessions)
        def first_session(self):
            return self._create()

        @rule(target=sessions)
        def create_session(self):
            return self._create()

        def _create(self):
            sid = self.store.create_session("model").id
            self.model[sid] = ModelSession()
            return sid

        @rule(sid=sessions, batch=st.lists(entries, min_size=1, max_size=6))
        def append_batch(self, sid, batch):
            if sid in self.deleted:
                with pytest.raises(NotFound):
                    self.store.append(sid, {"role": "user", "content": "late"})
                return
            m = self.model[sid]
            messages, conflict, fresh = [], False, {}
            for kind, value in batch:
                if kind == "fresh" or not m.uids:
                    payload = value if kind == "fresh" else {"role": "user", "content": "x", "tool_calls": None}
                    uid = f"u{next(self.counter)}"
                    fresh[uid] = payload
                    messages.append({"uid": uid, **payload})
                else:
                    uid = m.uids[value % len(m.uids)]
                    if kind == "resend":
                        messages.append({"uid": uid, **m.payloads[uid]})
                    else:
                        conflict = True
                        messages.append({"uid": uid, **_changed(m.payloads[uid])})
            if conflict:
                with pytest.raises(MessageConflict):
                    self.store.append(sid, messages)
                return
            rows = self.store.append(sid, messages)
            assert [r.uid for r in rows] == [msg["uid"] for msg in messages]
            for uid, payload in fresh.items():
                m.uids.append(uid)
                m.payloads[uid] = payload

        @rule(sid=sessions)
        def resend_whole_transcript(self, sid):
            if sid in self.deleted:
                return
            loaded = self.store.transcript(sid)
            if loaded:  # S-01: a re-flushed transcript stores nothing
                assert self.store.append(sid, loaded) == loaded

        @rule()
        def reopen_store(self):
            self.store.close()
            self.store = open_store()

        @rule(sid=consumes(sessions))
        def delete_session(self, sid):
            if sid in self.deleted:
                return
            self.store.delete_session(sid)
            del self.model[sid]
            self.deleted.add(sid)

        @invariant()
        def transcripts_match_the_model(self):
            for sid, m in self.model.items():
                rows = self.store.transcript(sid)
                assert [r.uid for r in rows] == m.uids
                for r in rows:
                    p = m.payloads[r.uid]
                    assert (r.role, r.content, r.tool_calls) == (p["role"], p["content"], p["tool_calls"])
                assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
                assert [r.id for r in rows] == sorted(r.id for r in rows)
                s = self.store.get_session(sid)
                assert s.message_count == len(m.uids)
                assert s.tool_call_count == m.tool_call_count()
            for sid in self.deleted:
                with pytest.raises(NotFound):
                    self.store.get_session(sid)

    return AppendModel


def test_appends_behave_like_a_plain_model(backend, tmp_path, store_location):
    location, defaults = store_location
    if backend == "sqlite":
        paths = (tmp_path / f"model-{i}.db" for i in itertools.count())
    elif backend in SERVERS:
        paths = (f"{defaults['schema']}_{i}" for i in itertools.count())
    else:  # a location of its own beside this test's
        paths = (f"{location}-model{i}" for i in itertools.count())

    def open_store():
        if backend in SERVERS:
            return sessiondb.open_store(location, schema=current[0])
        return sessiondb.open_store(current[0])

    current = [None]
    base = make_machine(open_store)

    class FreshStorePerExample(base):
        def __init__(self):
            current[0] = next(paths)  # every example starts from an empty store
            super().__init__()

    run_state_machine_as_test(
        FreshStorePerExample,
        settings=settings(
            max_examples=50,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
