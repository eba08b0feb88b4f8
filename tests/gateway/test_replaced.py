"""A gateway outlives a replaced store (S-13, S-28): once the file copied over a profile's
store has been examined, the gateway drops its refused handle and writes that profile again,
without a restart; what the replaced file refused waits in the store's spool for that file
and is never written into the copy."""

from __future__ import annotations

import subprocess

from sessiondb import keys, open_store
from sessiondb.gateway import Gateway
from sessiondb.home import profile_dir
from sessiondb.store import spool

from .conftest import all_texts, make_profile


def test_a_gateway_keeps_writing_a_profile_after_its_store_was_replaced(home):
    make_profile(home, "work")
    db = profile_dir(home, "work") / "state.db"
    with open_store(home=home, profile="other") as other:
        other.create_session("cli", title="the copy")
    key = keys.build("work", "telegram", "dm", "7")
    gw = Gateway(home, retry_interval=0.0, patience=0.2)
    try:
        assert gw.append(key, {"role": "user", "content": "before"}).stored
        subprocess.run(["cp", str(profile_dir(home, "other") / "state.db"), str(db)], check=True)

        refused = gw.append(key, {"role": "user", "content": "refused by the old file"})
        after = gw.append(key, {"role": "user", "content": "after"})

        assert refused.deferred and refused.spooled_to is not None
        assert after.stored, after
        assert not gw.status()["profiles"].get("work", {}).get("queued")
    finally:
        gw.close()
    with open_store(home=home, profile="work") as work:
        assert all_texts(work) == ["after"]  # the copy's content, then the new write; nothing of the old file
        assert [s.title for s in work.list_sessions(limit=10).items if s.title] == ["the copy"]
    [waiting] = spool.pending(db)
    assert [m["content"] for m in spool.read(waiting)["messages"]] == ["refused by the old file"]
