"""`sessiondb recover` (S-23): a new store from whatever is readable, the source untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import corpus
import sessiondb
from .conftest import damaged
from sessiondb.cli import main
from sessiondb.store.sqlite.safety import recover

TOTAL = corpus.SESSIONS * corpus.MESSAGES


def files(db: Path) -> dict[str, str]:
    return {s: corpus.digest(Path(f"{db}{s}")) for s in ("", "-wal", "-shm", "-journal")}


@pytest.mark.parametrize("how", ["garble_table_pages", "zero_header", "truncate", "garble_schema_row",
                                 "garble_index_blocks"])
def test_recover_salvages_into_a_new_file_and_never_touches_the_source(store, isolated_home, how):
    damaged(store, how)
    before = files(store)
    output = isolated_home / "recovered.db"

    result = CliRunner().invoke(main, ["recover", "--source", str(store), "--output", str(output), "--json"])

    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert files(store) == before, "recover changed the source"
    assert report["sessions_kept"] == corpus.SESSIONS
    assert report["messages_kept"] > 0
    if how == "truncate":
        # The store file holds rows and their b-tree indexes only (the search index has its
        # own file): the cut takes every index's count with it, so the loss is not estimated.
        assert report["messages_kept"] + report["messages_lost_estimate"] <= TOTAL
    else:
        assert report["messages_kept"] + report["messages_lost_estimate"] == TOTAL
    with sessiondb.open_store(output) as salvaged:
        stats = salvaged.stats()
        assert (stats.sessions, stats.messages) == (corpus.SESSIONS, report["messages_kept"])
        assert len(salvaged.search("kyoto", limit=1000)) == report["messages_kept"]
        for session in salvaged.list_sessions(limit=100).items:
            assert session.message_count == len(salvaged.transcript(session.id))


def test_recover_reads_around_damaged_pages_by_rowid(store):
    damaged(store, "garble_table_pages")

    report = recover.recover(store, None, inspect_only=True)

    messages = report.tables["messages"]
    assert messages.error is not None and messages.lost_ranges
    assert 0 < messages.lost_estimate < TOTAL // 4, "more than two pages' worth of rows were lost"
    assert report.messages_kept == TOTAL - messages.lost_estimate


def test_a_zeroed_header_is_rebuilt_on_the_copy_and_everything_is_kept(store):
    damaged(store, "zero_header")
    report = recover.recover(store, None, inspect_only=True)
    assert report.header_rewritten and report.messages_kept == TOTAL and report.messages_lost_estimate == 0


def test_inspect_only_writes_nothing(store, isolated_home):
    damaged(store, "truncate")
    before = {p.name for p in isolated_home.iterdir()}

    result = CliRunner().invoke(main, ["recover", "--source", str(store), "--inspect-only"])

    assert result.exit_code == 0 and "messages readable" in result.output
    assert {p.name for p in isolated_home.iterdir()} == before


def test_messages_whose_session_row_was_lost_are_kept_under_a_stub(store, isolated_home):
    import apsw

    conn = apsw.Connection(str(store))
    sid = conn.execute("SELECT id FROM sessions ORDER BY rowid LIMIT 1").fetchone()[0]
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("DELETE FROM sessions WHERE id = ?", (sid,))  # as if its page were lost
    conn.close()

    report = recover.recover(store, isolated_home / "new.db")

    assert report.sessions_stubbed == 1 and report.messages_kept == TOTAL
    with sessiondb.open_store(isolated_home / "new.db") as s:
        assert s.get_session(sid).source == "recovered"
        assert len(s.transcript(sid)) == corpus.MESSAGES


def test_recover_refuses_to_overwrite_anything(store, isolated_home):
    existing = isolated_home / "exists.db"
    existing.write_bytes(b"keep me")
    for output in (existing, store):
        result = CliRunner().invoke(main, ["recover", "--source", str(store), "--output", str(output)])
        assert result.exit_code == 1
    assert existing.read_bytes() == b"keep me"
    missing = CliRunner().invoke(main, ["recover", "--source", str(store)])
    assert missing.exit_code == 2
