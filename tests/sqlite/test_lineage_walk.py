"""The lineage walk's hop bound (store/lineage.py), which needs its module's limit lowered."""

from __future__ import annotations

import pytest

import sessiondb
from sessiondb.store import lineage as lineage_module


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "walk.db") as s:
        yield s


@pytest.fixture
def sid(store):
    return store.create_session("cli").id


def rotate(store, session_id):
    lease = store.begin_compaction(session_id)
    return store.commit_compaction(lease, {"role": "system", "content": "the gist"}, mode="rotate")


def test_a_lineage_too_long_to_follow_is_refused_not_walked_forever(store, sid, monkeypatch):
    monkeypatch.setattr(lineage_module, "MAX_HOPS", 3)
    current = sid
    for _ in range(4):
        current = rotate(store, current).id
    with pytest.raises(sessiondb.StorageError, match="lineage"):
        store.tip(sid)
