"""The API mirrors `sessiondb restore-captured` (S-49, S-43): the doctor names the way back
for a spooled batch whose session the store lost, and the route brings it back, once."""

from __future__ import annotations

import sessiondb
from sessiondb.inputs import prepare_messages
from sessiondb.store import spool


def test_the_restore_route_brings_back_a_batch_whose_session_was_lost_and_stores_nothing_twice(api, server):
    db = server.home / "state.db"
    with sessiondb.open_store(home=server.home) as store:
        generation = store.backend.generation
    spool.write(db, "lost", prepare_messages({"uid": "kept", "role": "user", "content": "refused, then lost"}),
                "deleted_wal", generation)

    named = api.get("/api/doctor").json()["steps"]
    first = api.post("/api/doctor/restore-captured").json()
    second = api.post("/api/doctor/restore-captured").json()

    assert "restore-captured`" in named[0] and not any("doctor --repair" in step for step in named)
    assert first["complete"] and first["sessions"]["lost"] == {"restored": 1, "already_there": 0, "created": True,
                                                              "skipped": []}
    assert second["restored"] == 0 and second["spool"] == []
    with sessiondb.open_store(home=server.home) as store:
        assert [m.uid for m in store.transcript("lost")] == ["kept"]
        assert store.get_session("lost").source == "recovered"
    assert api.get("/api/doctor").json()["healthy"]
