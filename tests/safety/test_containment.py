"""Damage underneath a live writer in another process (S-13, S-14, S-15, S-17, S-18).

Each test starts a real writer process on a named profile, damages its files the way the
field incidents did (cp over the store, mv over it, rm of the WAL), and checks that the
next append is refused with the right cause, kept in the spool, and explained with the
profile's own command, and that nothing was written into the wrong file.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import sessiondb
from sessiondb.store import spool
from sessiondb.store.sqlite.index.coverage import differences
from sessiondb.store.sqlite.index.schema import SUFFIX

sys.path.insert(0, str(Path(__file__).parent))  # the writer process and helpers the safety tests share
from writers import PROFILE, LiveWriter, another_store, assert_refused, digest, spooled_uids  # noqa: E402


@pytest.fixture
def live(isolated_home):
    writer = LiveWriter(isolated_home)
    yield writer
    writer.close()


@pytest.fixture
def db(isolated_home) -> Path:
    return isolated_home / "profiles" / PROFILE / "state.db"


def test_a_store_copied_over_a_live_writer_refuses_the_next_append_and_spools_it(live, db, isolated_home):
    assert live.send("append before")["ok"]
    assert live.send("checkpoint")["ok"]
    shutil.copyfile(another_store(isolated_home), db)  # cp: same inode, new content
    before = digest(db), digest(Path(f"{db}-wal"))

    reply = live.send("append after-copy")

    assert_refused(reply, "replaced")
    assert "spool" in reply["error"] and Path(reply["spooled_to"]).exists()
    assert spooled_uids(db) == ["after-copy"]
    assert (digest(db), digest(Path(f"{db}-wal"))) == before, "something was written into the copied file"


def test_a_store_moved_over_a_live_writer_refuses_the_next_append_and_spools_it(live, db, isolated_home):
    os.replace(another_store(isolated_home), db)  # mv: a new inode at the path

    reply = live.send("append after-move")

    assert_refused(reply, "replaced")
    assert spooled_uids(db) == ["after-move"]


def test_a_deleted_wal_is_captured_and_writes_stop_until_every_process_quits(live, db):
    assert live.send("append before")["ok"]
    wal = Path(f"{db}-wal")
    wal_size = wal.stat().st_size
    wal.unlink()

    reply = live.send("append after-rm")

    assert_refused(reply, "deleted_wal")
    assert "quit every process" in reply["guidance"]
    assert "do not run a fix or delete files" in reply["guidance"]
    captures = list(db.parent.glob("retired-wal-*"))
    assert len(captures) == 1
    manifest = json.loads((captures[0] / "manifest.json").read_text())
    assert manifest["bytes"] == wal_size and manifest["cause"] == "deleted_wal"
    assert (captures[0] / "state.db-wal").stat().st_size == wal_size
    assert oct((captures[0] / "manifest.json").stat().st_mode & 0o777) == "0o600"
    assert spooled_uids(db) == ["after-rm"]


def test_a_refusal_is_sticky_for_every_later_write_of_the_process(live, db):
    Path(f"{db}-wal").unlink()
    first = live.send("append one")
    second = live.send("append two")

    assert_refused(first, "deleted_wal")
    assert_refused(second, "deleted_wal")
    assert spooled_uids(db) == ["one", "two"]


def test_spooled_batches_are_replayed_in_order_at_the_next_healthy_open(db, isolated_home):
    with sessiondb.open_store(home=isolated_home, profile=PROFILE) as store:
        sid = store.create_session("gateway").id
    from sessiondb.inputs import prepare_messages

    for i in range(3):
        spool.write(db, sid, prepare_messages({"uid": f"kept-{i}", "role": "user", "content": str(i)}), "replaced")

    with sessiondb.open_store(home=isolated_home, profile=PROFILE) as store:
        assert [m.uid for m in store.transcript(sid)] == ["kept-0", "kept-1", "kept-2"]
        assert spool.pending(db) == []
        assert store.replay_spool().replayed == []  # nothing left, nothing repeated


def test_a_spooled_batch_that_cannot_be_replayed_keeps_its_file(db, isolated_home):
    from sessiondb.inputs import prepare_messages

    with sessiondb.open_store(home=isolated_home, profile=PROFILE) as store:
        kept = spool.write(db, "no-such-session", prepare_messages({"role": "user", "content": "x"}), "replaced")
        report = store.replay_spool()
    assert report.replayed == [] and report.kept[0][0] == str(kept)
    assert kept.exists()


def test_spool_files_are_private(db, isolated_home):
    from sessiondb.inputs import prepare_messages

    kept = spool.write(db, "s", prepare_messages({"role": "user", "content": "x"}), "corrupt")
    assert oct(kept.stat().st_mode & 0o777) == "0o600"
    assert oct(kept.parent.stat().st_mode & 0o777) == "0o700"


def _garble_rightmost_messages_leaf(db: Path) -> None:
    """Overwrite the page that the next append writes to with bytes that are not a b-tree."""
    import apsw

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    (page,) = conn.execute(
        "SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY path DESC LIMIT 1"
    ).fetchone()
    conn.close()
    with open(db, "r+b") as f:  # another process than the writer: its locks are not ours to lose
        f.seek((page - 1) * page_size)
        f.write(bytes([0x0D, 0xFF]) + os.urandom(page_size - 2))


def _poke(db: Path) -> None:
    """An unrelated write from a third process, so the writer re-reads pages from disk."""
    import apsw

    conn = apsw.Connection(str(db))
    conn.execute("INSERT OR REPLACE INTO store_meta(key, value) VALUES ('poke', 'x')")
    conn.close()


def test_structural_corruption_on_a_write_is_sticky_and_close_skips_the_checkpoint(live, db):
    for i in range(40):
        assert live.send(f"append bulk-{i}")["ok"]
    assert live.send("checkpoint")["ok"]
    _garble_rightmost_messages_leaf(db)
    _poke(db)

    first = live.send("append after-damage")
    assert_refused(first, "corrupt")
    second = live.send("append later")
    assert_refused(second, "corrupt")
    assert live.send("reopen")["cause"] == "corrupt"  # no handle in the process reopens it
    assert spooled_uids(db) == ["after-damage", "later"]

    main_file = digest(db)
    live.close()
    assert digest(db) == main_file, "closing copied WAL pages into the damaged file"


def _garble_search_index(db: Path) -> None:
    """Flip the bytes of the word index's structure record (in the index's own file), from a
    third process."""
    import apsw

    conn = apsw.Connection(f"{db}{SUFFIX}")
    conn.execute("UPDATE words_data SET block = X'00000001FFFFFFFF0102030405' WHERE id = 10")
    conn.close()


def test_index_damage_is_not_database_damage_the_write_lands_and_the_index_is_rebuilt_later(live, db, isolated_home):
    for i in range(20):
        assert live.send(f"append bulk-{i}")["ok"]
    assert "bulk-3" in live.send("search bulk-3")["uids"]  # the index file is there, caught up
    _garble_search_index(db)

    # Another process holds the index from the damage on, so the indexer, which meets the
    # damage as it follows these appends, can never rebuild it under that process.
    with open(f"{db}{SUFFIX}", "rb"):
        assert live.send("append after-index-damage")["ok"]  # the write path never reads the index
        assert live.send("append and-after-that")["ok"]
        assert spool.pending(db) == []
        refused = live.send('search "message after-index-damage"')
        assert not refused["ok"] and refused["cause"] in ("fts_index", "corrupt"), refused
    healed = live.send('search "message after-index-damage"')  # nobody else holds it: rebuilt
    assert healed == {"ok": True, "uids": ["after-index-damage"]}
    live.close()

    with sessiondb.open_store(home=isolated_home, profile=PROFILE) as store:
        uids = [m.uid for m in store.transcript("live")]
        assert uids[-2:] == ["after-index-damage", "and-after-that"]
        assert differences(db) == []  # the rebuilt index is what indexing from nothing makes
