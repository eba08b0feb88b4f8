"""An extend that carries metadata patches is refused whole on a damaged store.

An append refused because the store's file was replaced, deleted or corrupted is kept in
the spool and replayed later; the spool keeps messages only. A batch whose metadata patch
must land with it (an ADK event and its state) is therefore refused, not spooled: replayed
without its patch, the event would be stored without its state.
"""

from __future__ import annotations

import pytest

import sessiondb
from sessiondb.errors import Cause, StorageError, StoreDamaged


def event(root, tail, history):
    return [{"role": "user", "content": "event"}]


def test_an_extend_with_a_metadata_patch_is_refused_whole_and_one_without_is_spooled(tmp_path, monkeypatch):
    with sessiondb.open_store(tmp_path / "state.db") as store:
        sid = store.create_session("adk", metadata={"state": "before"}).id
        home = store.create_session("adk-state").id
        backend = store._open()
        injected = []

        def damaged(work):
            injected.append(work)
            raise StoreDamaged("the store's file was replaced under this process", Cause.REPLACED)

        monkeypatch.setattr(backend, "write", damaged)
        with pytest.raises(StoreDamaged):
            store.extend(sid, event, metadata={"state": "after"})
        with pytest.raises(StoreDamaged):  # a patch of another session's, the same
            store.extend(sid, event, metadata_of={home: {"state": "after"}})
        with pytest.raises(StorageError, match="spool"):
            store.extend(sid, event)  # the same batch without a patch is kept
        assert len(injected) == 3  # every writes met the damage
        monkeypatch.undo()
        assert len(store.replay_spool().replayed) == 1
        assert [m.content for m in store.transcript(sid)] == ["event"]
        assert store.get_session(sid).metadata == {"state": "before"}
        assert store.get_session(home).metadata == {}
