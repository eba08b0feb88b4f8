"""Store.verify() reports each broken invariant: a store is corrupted by hand (raw SQL on
the file, the one place a test may write it) and verify must name what was broken."""

from __future__ import annotations

import apsw
import pytest

import sessiondb


def user(text, **extra):
    return {"role": "user", "content": text, **extra}


@pytest.fixture
def path(tmp_path):
    """A store holding every kind of row: a rotated lineage with messages kept verbatim, a
    rewound message, tool calls, usage and a live lease."""
    path = tmp_path / "verify.db"
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli", title="Root").id
        store.append(sid, [user(f"m{i} about kyoto", uid=f"m{i}") for i in range(6)])
        keep = [m.to_dict() for m in store.transcript(sid)[-2:]]
        lease = store.begin_compaction(sid)
        store.append(sid, {"role": "assistant", "content": None, "uid": "calls",
                           "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
        child = store.commit_compaction(lease, [{"role": "system", "content": "gist", "uid": "gist"}, *keep],
                                        mode="rotate")
        store.append(child.id, [user("after", uid="after"), user("undone", uid="undone")])
        store.rewind(child.id, store.transcript(child.id)[-2].id)
        store.record_usage(child.id, model="m", input_tokens=3)
        store.begin_compaction(child.id)
        assert store.verify().ok
    return path


def corrupt(path, *statements):
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA foreign_keys = OFF")  # orphans cannot be made otherwise
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def problems(path):
    with sessiondb.open_store(path) as store:
        report = store.verify()
    return report.problems


def ids(path):
    with sessiondb.open_store(path) as store:
        root = store.find_session("Root").id
        return root, store.tip(root).id


def test_a_store_written_only_through_the_api_verifies_clean_and_counts_what_it_checked(path):
    with sessiondb.open_store(path) as store:
        report = store.verify()
    assert report.ok and report.problems == [] and report.notes == []
    # Every stored row is indexed, the rewound one too (the state is joined at query time);
    # no message has CJK text, so the trigram index holds none.
    assert report.checked == {"sessions": 2, "messages": 10, "search_words": 10, "search_stems": 10,
                              "search_cjk": 0, "search_thoughts": 0, "leases": 1, "usage": 1}
    assert report.to_dict()["ok"] is True


def test_verify_on_a_handle_that_saw_many_writes_finds_no_damage_that_is_not_there(tmp_path):
    # Each verify reads on a pooled connection whose FTS5 structure earlier writes outdated.
    with sessiondb.open_store(tmp_path / "busy.db") as store:
        sid = store.create_session("cli").id
        for i in range(60):
            store.append(sid, user(f"text of {i}"))
            assert store.verify().problems == [], f"after {i + 1} appends"


def test_a_uid_stored_twice_along_a_lineage_is_reported(path):
    root, tip = ids(path)
    corrupt(path, f"INSERT INTO messages(session_id, uid, seq, role, content, timestamp, state) "
                  f"VALUES ('{tip}', 'm0', 99, 'user', 'm0 about kyoto', 1, 'compacted')")
    [problem] = problems(path)
    assert problem.startswith("identity:") and "'m0'" in problem and root in problem


def test_counters_that_disagree_with_the_rows_are_reported(path):
    _, tip = ids(path)
    corrupt(path, f"UPDATE sessions SET tool_call_count = 7 WHERE id = '{tip}'")
    [problem] = problems(path)
    assert problem.startswith("counters:") and "7 tool calls" in problem and "hold 5 and 1" in problem


def test_a_seq_that_falls_as_the_id_rises_is_reported(path):
    _, tip = ids(path)
    corrupt(path, f"UPDATE messages SET seq = 100 WHERE session_id = '{tip}' AND uid = 'calls'")
    [problem] = problems(path)
    assert problem.startswith("order:") and "after a message with seq 100" in problem


@pytest.mark.parametrize("mode", ["in_place", "rotate"])
def test_messages_a_compaction_kept_verbatim_after_its_summary_are_not_disorder(tmp_path, mode):
    # The summary, kept messages too, takes the seq of the newest message it replaces; in a
    # store compacted by an older sessiondb the kept ones kept theirs, lower. Rows rewound
    # before the compaction and restored after it come first (in place).
    db = tmp_path / "kept.db"
    with sessiondb.open_store(db) as store:
        sid = store.create_session("cli").id
        store.append(sid, [user("rewound one", uid="r1"), user("rewound two", uid="r2")])
        store.rewind(sid, 0)
        store.append(sid, [user("kept one", uid="k1"), user("kept two", uid="k2"), user("archived", uid="a")])
        keep = [m.to_dict() for m in store.transcript(sid)[:2]]
        live = store.commit_compaction(store.begin_compaction(sid), [{"role": "system", "content": "gist"}, *keep],
                                       mode=mode)
        store.restore_rewound(sid)
        # The summary's seq is that of the archived message: in the session, or in the parent.
        assert [m.seq for m in store.transcript(live.id)][-3:] == [5, 5, 5]
        assert store.verify().problems == []
    conn = apsw.Connection(str(db))  # the layout an older sessiondb wrote
    conn.execute("UPDATE messages SET seq = 3 WHERE uid = 'k1' AND state = 'active'")
    conn.execute("UPDATE messages SET seq = 4 WHERE uid = 'k2' AND state = 'active'")
    conn.close()
    with sessiondb.open_store(db) as store:
        assert [m.seq for m in store.transcript(live.id)][-3:] == [5, 3, 4]
        assert store.verify().problems == []


def corrupt_index(path, *statements):
    """Raw SQL on the search index's own file: an index that missed a batch, by hand."""
    conn = apsw.Connection(f"{path}-search")
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


def message_id(path, uid):
    conn = apsw.Connection(str(path))
    try:
        return conn.execute("SELECT id FROM messages WHERE uid = ?", (uid,)).fetchone()[0]
    finally:
        conn.close()


def test_a_stored_message_missing_from_the_index_is_reported(path):
    mid = message_id(path, "gist")
    corrupt_index(path, f"DELETE FROM words WHERE rowid = {mid}")
    assert problems(path) == [f"search: message {mid} is missing from words"]


def test_an_indexed_message_that_is_not_stored_is_reported(path):
    mid = message_id(path, "m0")  # compacted in the root: no counter counts it
    # A delete the store did not log for the index (its trigger dropped for it, then put back).
    conn = apsw.Connection(str(path))
    (trigger,) = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'messages_search_gone'").fetchone()
    conn.close()
    corrupt(path, "DROP TRIGGER messages_search_gone", "DELETE FROM messages WHERE uid = 'm0'", trigger)
    assert problems(path) == [f"search: {index} holds message {mid}, which is not stored" for index in ("words", "stems")]


def test_an_index_holding_other_text_than_the_message_is_reported(path):
    mid = message_id(path, "gist")
    corrupt_index(path, f"DELETE FROM words WHERE rowid = {mid}",
                  f"INSERT INTO words(rowid, text) VALUES ({mid}, 'osaka now')")
    assert problems(path) == [f"search: words holds other text than message {mid} has"]


@pytest.mark.parametrize("column, expected", [("token", "above the 2 tokens handed out"),
                                              ("watermark", "above the session's newest message")])
def test_a_lease_beyond_what_the_store_handed_out_is_reported(path, column, expected):
    corrupt(path, f"UPDATE compaction_leases SET {column} = 1000")
    [problem] = problems(path)
    assert problem.startswith("leases:") and expected in problem


@pytest.mark.parametrize("table, row", [
    ("messages", "(session_id, uid, seq, role, content, timestamp, state) "
                 "VALUES ('ghost', 'g', 1, 'user', 'lost', 1, 'rewound')"),
    ("usage", "(session_id, model, provider, task) VALUES ('ghost', 'm', '', '')"),
])
def test_rows_of_a_session_that_does_not_exist_are_reported(path, table, row):
    corrupt(path, f"INSERT INTO {table}{row}")
    [problem] = problems(path)
    assert problem == f"orphans: 1 {table} row(s) of session ghost, which does not exist"


def test_damage_to_the_file_itself_is_reported_and_the_rows_left_to_the_doctor(path):
    with sessiondb.open_store(path) as store:
        store.create_session("cli", session_key="k")
    # A session written while the key index said it was over another column, then the
    # schema put back: the index holds an entry its table does not match. The rows are
    # intact and the schema is as the migrations made it (so the store opens, S-29); the
    # file is not.
    over_source = "UPDATE sqlite_schema SET sql = replace(sql, 'sessions(session_key)', 'sessions(source)') " \
                  "WHERE name = 'sessions_key'"
    corrupt(path, "PRAGMA writable_schema = ON", over_source)
    corrupt(path, "INSERT INTO sessions(id, source, session_key, started_at, metadata) "
                  "VALUES ('late', 'cli', 'k2', 0, '{}')")
    corrupt(path, "PRAGMA writable_schema = ON",
            "UPDATE sqlite_schema SET sql = replace(sql, 'sessions(source)', 'sessions(session_key)') "
            "WHERE name = 'sessions_key'")
    with sessiondb.open_store(path) as store:
        report = store.verify()
    assert report.problems and all(p.startswith("file:") and "sessions_key" in p for p in report.problems)
    assert report.notes == ["rows: not checked, the file itself is damaged (run `sessiondb doctor`)"]


def test_a_stems_index_holding_other_text_than_the_message_is_reported(path):
    mid = message_id(path, "gist")
    corrupt_index(path, f"DELETE FROM stems WHERE rowid = {mid}",
                  f"INSERT INTO stems(rowid, text) VALUES ({mid}, 'osaka now')")
    assert problems(path) == [f"search: stems holds other text than message {mid} has"]
