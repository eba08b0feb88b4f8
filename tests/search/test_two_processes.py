"""Search stays exact across processes: a property over interleaved appends, searches,
compactions, rewinds, restores and deletes, issued by this process and another one, each
with its own handle (so its own writer and indexer), checked against a model.

Every search, and every recall of a question about the word, from either process, right
after whatever the other one had acknowledged, must return exactly the model's live
messages containing the word: acknowledged means
searchable (read-your-writes across processes), rewound never found, compacted found and
marked, deleted gone. At the end the index equals one rebuilt from nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import sessiondb
from sessiondb.store.sqlite.index.coverage import differences

sys.path.insert(0, str(Path(__file__).parent))
import peer as peer_calls  # noqa: E402
from peer import Peer  # noqa: E402

SESSIONS = ["sa", "sb"]
WORDS = ["kyoto", "harbour", "lantern", "東京の港"]  # the last one goes through the trigram index


class Local:
    """The same calls on this process's own handle."""

    def __init__(self, store) -> None:
        self.store = store

    def __call__(self, op: str, **args):
        return peer_calls.call(self.store, op, args)


@pytest.fixture(scope="module")
def peer():
    p = Peer()
    yield p
    p.stop()


class Model:
    """uid -> [session, words, state]; sessions that exist."""

    def __init__(self) -> None:
        self.rows: dict[str, list] = {}
        self.order: list[str] = []
        self.sessions: set[str] = set()

    def expected(self, word: str) -> set[tuple[str, bool]]:
        return {(u, r[2] == "compacted") for u, r in self.rows.items()
                if word in r[1] and r[2] != "rewound" and r[0] in self.sessions}


ops = st.lists(st.tuples(
    st.sampled_from(["append", "append", "append", "search", "compact", "rewind", "restore", "delete"]),
    st.integers(0, 1),  # which process
    st.sampled_from(SESSIONS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=2, unique=True),
    st.integers(0, 5),
), min_size=1, max_size=25)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=ops)
def test_searches_from_either_process_agree_with_the_model(tmp_path_factory, peer, steps):
    path = tmp_path_factory.mktemp("two") / "state.db"
    model = Model()
    counter = iter(range(10**6))
    with sessiondb.open_store(path) as store:
        peer("open", path=str(path))
        who = [Local(store), peer]
        try:
            for op, w, sid, words, n in steps:
                run = who[w]
                if sid not in model.sessions and op in ("append", "compact", "rewind", "restore"):
                    run("create", session=sid)
                    model.sessions.add(sid)
                if op == "append":
                    batch = []
                    for _ in range(n % 3 + 1):
                        uid = f"u{next(counter)}"
                        batch.append({"uid": uid, "role": "user", "content": f"{' '.join(words)} note {uid}"})
                        model.rows[uid] = [sid, set(words), "active"]
                        model.order.append(uid)
                    run("append", session=sid, messages=batch)
                elif op == "compact":
                    uid = f"sum{next(counter)}"
                    run("compact", session=sid, summary=uid, content=f"summary {words[0]}")
                    for r in model.rows.values():
                        if r[0] == sid and r[2] == "active":
                            r[2] = "compacted"
                    model.rows[uid] = [sid, {words[0]}, "active"]
                    model.order.append(uid)
                elif op == "rewind":
                    live = run("ids", session=sid)
                    if live:
                        keep_uid, keep_id = live[min(n, len(live) - 1)]
                        run("rewind", session=sid, to=keep_id)
                        after = {u for u, i in live if i > keep_id}
                        for u in after:
                            model.rows[u][2] = "rewound"
                elif op == "restore" and sid in model.sessions:
                    run("restore", session=sid)
                    for r in model.rows.values():
                        if r[0] == sid and r[2] == "rewound":
                            r[2] = "active"
                elif op == "delete" and sid in model.sessions:
                    run("delete", session=sid)
                    model.sessions.discard(sid)
                    for u in [u for u, r in model.rows.items() if r[0] == sid]:
                        del model.rows[u]
                # After every step, a search from the process that did not act (the harder case).
                word = words[n % len(words)]
                found = {tuple(h) for h in who[1 - w]("search", query=word)}
                assert found == model.expected(word), (op, word, steps)  # steps: the failing sequence
                # Recall reads the same caught-up index: a question of one word finds the same.
                recalled = {tuple(h) for h in who[1 - w]("recall", query=f"What about {word}?")}
                assert recalled == model.expected(word), ("recall", op, word, steps)
        finally:
            peer("close")
    assert differences(path) == []
