"""A message stored at an id SQLite gave out before is searchable.

SQLite gives a new row the highest id + 1, so when the newest message is deleted the next
one takes its id. The index follows the store by id, and an id it has already indexed
looks done. Here another process deletes the newest message (a session deleted) and
stores a new one, which takes the freed id, either before this process's indexer runs a
batch or in the middle of one (after the batch has read its snapshot of the store, before
it commits). The other process's own indexer is kept from running (`--unindexed`), so
the interleaving is exactly the one named: no sleeps, no luck.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import sessiondb
from sessiondb.store.sqlite.index import indexer as indexer_module
from sessiondb.store.sqlite.index.coverage import differences
from sessiondb.store.sqlite.index.indexer import Indexer

sys.path.insert(0, str(Path(__file__).parent))
from peer import Peer  # noqa: E402


@pytest.fixture
def writer():
    """Another process that writes and never indexes."""
    p = Peer("--unindexed")
    yield p
    p.stop()


def _during_the_next_batch(monkeypatch, action) -> list[bool]:
    """Run `action` once, inside the next index batch, after the batch read the store."""
    done: list[bool] = []
    index_rows = indexer_module._add

    def add(conn, rows, *args, **kwargs):
        if not done:
            done.append(True)
            action()
        return index_rows(conn, rows, *args, **kwargs)

    monkeypatch.setattr(indexer_module, "_add", add)
    return done


@pytest.mark.parametrize("when", ["before_the_batch", "during_the_batch"])
def test_a_message_at_a_freed_id_is_found(tmp_path, writer, monkeypatch, when):
    path = tmp_path / "state.db"
    writer("open", path=str(path))
    writer("create", session="kept")
    writer("create", session="gone")
    writer("append", session="kept", messages=[{"uid": "k1", "role": "user", "content": "harbour one"}])
    writer("append", session="gone", messages=[{"uid": "g1", "role": "user", "content": "kyoto newest"}])
    [[_, freed]] = writer("ids", session="gone")

    indexer = Indexer(path, patience=5.0, vfs=None)
    try:
        indexer.catch_up()  # the newest message, `freed`, is indexed
        writer("delete", session="gone")

        def store_the_new_message():
            writer("append", session="kept", messages=[{"uid": "k2", "role": "user", "content": "lantern new"}])

        if when == "before_the_batch":
            store_the_new_message()
        else:
            ran = _during_the_next_batch(monkeypatch, store_the_new_message)
        indexer.catch_up()
        if when == "during_the_batch":
            assert ran, "the batch never read a row"
            monkeypatch.undo()
        assert dict(writer("ids", session="kept"))["k2"] == freed  # the id was given out again
        indexer.catch_up()  # whatever the batch left for the next one
    finally:
        indexer.stop()
    writer("close")

    with sessiondb.open_store(path) as store:
        assert [h.uid for h in store.search("lantern")] == ["k2"]
        assert store.search("kyoto") == []
        assert store.verify().ok
    assert differences(path) == []
