"""A store made by any earlier release opens, migrates to the current schema and keeps
every row; the doctor finds nothing wrong with it before or after."""

from __future__ import annotations

import sys
from pathlib import Path

import apsw
import pytest

sys.path.insert(0, str(Path(__file__).parent))

import old_stores  # noqa: E402
import sessiondb  # noqa: E402
from old_stores import CHILD, ENDED, MESSAGES, PARENT, ROUTE_KEY  # noqa: E402
from sessiondb.store.sqlite.safety import doctor  # noqa: E402

VERSIONS = range(1, old_stores.CURRENT + 1)
IDS = old_stores.VERSIONS


@pytest.fixture(params=VERSIONS, ids=IDS)
def version(request) -> int:
    return request.param


@pytest.fixture
def old(tmp_path, version) -> Path:
    return old_stores.build(tmp_path / "old.db", version)


def test_the_doctor_finds_a_store_of_an_older_version_healthy(old):
    # It lacks the objects of later migrations: that is its version, not damage.
    report = doctor.examine(old)
    assert report.damage == "none" and report.healthy, report.problems


def test_the_doctor_checks_an_older_store_against_its_own_version(old):
    conn = apsw.Connection(str(old))
    conn.execute("DROP INDEX messages_session")  # in the schema since the first release
    conn.close()
    report = doctor.examine(old)
    assert report.damage == "schema"
    assert any("messages_session" in f for f in report.findings)


def test_opening_an_old_store_migrates_it_to_the_current_schema(old):
    sessiondb.open_store(old).close()
    conn = apsw.Connection(str(old))
    try:
        assert old_stores.schema_of(conn) == old_stores.snapshot(old_stores.CURRENT)
    finally:
        conn.close()
    report = doctor.examine(old)
    assert report.damage == "none" and report.healthy, report.problems


def test_an_old_store_keeps_its_page_layout_until_a_vacuum_gives_it_a_map(old):
    """No earlier release gave its files a map of their pages (auto_vacuum): opening one
    migrates its schema and leaves its pages as they are; `vacuum` adds the map."""
    def auto_vacuum() -> int:
        conn = apsw.Connection(str(old))
        try:
            return conn.execute("PRAGMA auto_vacuum").fetchone()[0]
        finally:
            conn.close()

    assert auto_vacuum() == 0
    with sessiondb.open_store(old) as store:
        assert [m.uid for m in store.transcript(ENDED)] == ["e-user", "e-marker"]
        assert auto_vacuum() == 0
        store.vacuum()
    assert auto_vacuum() == 2


def test_every_session_keeps_its_fields(old, version):
    with sessiondb.open_store(old) as store:
        parent, child, ended = (store.get_session(s) for s in (PARENT, CHILD, ENDED))
    assert (parent.title, parent.model, parent.metadata, parent.pinned) == ("Harbour log", "gpt-x",
                                                                           {"topic": "harbour"}, True)
    assert (child.session_key, child.chat_id, child.chat_type, child.thread_id) == (ROUTE_KEY, "42", "dm", "t9")
    assert child.parent_session_id == PARENT
    # Before 0003_lineage a child had no relation; the migration leaves it unset, not guessed.
    assert child.parent_relation == ("compression" if version >= 3 else None)
    assert (ended.ended_at, ended.end_reason, ended.archived, ended.hidden) == (60.0, "user_exit", True, True)


def test_every_message_is_kept_in_its_state_and_order(old):
    with sessiondb.open_store(old) as store:
        full = {s: store.transcript(s, include_compacted=True) for s in (PARENT, CHILD, ENDED)}
        live = store.transcript(PARENT)
    expected = {s: [m[1] for m in MESSAGES if m[0] == s and m[5] != "rewound"] for s in (PARENT, CHILD, ENDED)}
    assert {s: [m.uid for m in rows] for s, rows in full.items()} == expected
    assert [m.uid for m in live] == ["p-parts", "p-tool"]
    states = {m.uid: m.state for rows in full.values() for m in rows}
    assert states["p-user"] == "compacted" and states["p-tool"] == "active"
    tool = next(m for m in full[PARENT] if m.uid == "p-tool")
    assert (tool.tool_call_id, tool.tool_name) == ("call-1", "tides")
    assert next(m for m in full[PARENT] if m.uid == "p-parts").text == "the harbour \nopens at six"
    written = {uid: content for _, uid, _, content, _, _ in MESSAGES}
    assert next(m for m in full[ENDED] if m.uid == "e-marker").content == written["e-marker"]


def test_the_export_carries_every_row(old):
    with sessiondb.open_store(old) as store:
        records = list(store.export())
    sessions = {r["session"]["id"] for r in records if r["type"] == "session"}
    messages = {r["message"]["uid"]: r["message"]["state"] for r in records if r["type"] == "message"}
    usage = [r["usage"] for r in records if r["type"] == "usage"]
    assert sessions == {PARENT, CHILD, ENDED}
    assert messages == {uid: state for _, uid, _, _, _, state in MESSAGES}
    assert [(u["session_id"], u["input_tokens"], u["calls"]) for u in usage] == [(PARENT, 120, 3)]


def test_search_finds_the_old_messages(old):
    with sessiondb.open_store(old) as store:
        harbour = {h.uid: h.compacted for h in store.search("harbour", include_tools=True, limit=100)}
        cjk = [h.uid for h in store.search("東京の港")]
        substring = [h.uid for h in store.search("ighthou", substring=True)]
    # Active and compacted messages are found, and hits say which; rewound ones never.
    assert harbour == {"p-user": True, "p-sys": True, "p-parts": False, "p-tool": False, "c-summary": False}
    assert cjk == ["c-cjk"] and substring == ["e-user"]


def test_usage_totals_survive(old):
    with sessiondb.open_store(old) as store:
        usage = store.usage(PARENT)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens,
            usage.reasoning_tokens, usage.cost_usd, usage.calls) == (120, 30, 10, 5, 2, 0.25, 3)
    assert [(r.model, r.provider) for r in usage.rows] == [("gpt-x", "openai")]


def test_leases_and_routes_survive_where_the_version_has_them(old, version):
    with sessiondb.open_store(old) as store:
        lease = store.compaction_lease(CHILD)
        route = store.routing.get(ROUTE_KEY)
        if version < 3:
            assert lease is None
            # The fencing counter starts where a new store's does: the first lease gets token 1.
            assert store.begin_compaction(PARENT).token == 1
        else:
            assert (lease.token, lease.watermark, lease.holder) == (1, 4, "old-compactor")
            assert store.begin_compaction(PARENT).token == 2  # never reuses a token handed out
    if version < 4:
        assert route is None
    else:
        assert (route.session_id, route.state, route.turn_started_at) == (CHILD, "resume_pending", 107.0)
