"""The Rows contract (store/rows.py) on every backend: what each rule of the neutral layer relies on."""

from __future__ import annotations

import pytest

from sessiondb.store.rows import (
    INSERTED, Taken, above, at_least, at_most, below, one_of, other_than, starting,
)


def _session(sid: str, **columns):
    return {"id": sid, "source": "cli", "started_at": 1.0, "metadata": "{}", **columns}


def _message(sid: str, uid: str, seq: int, content: str = "hello", **columns):
    return {"session_id": sid, "uid": uid, "seq": seq, "role": "user", "content": content,
            "timestamp": 2.0, "state": "active", **columns}


@pytest.fixture
def rows_of(store):
    """write(work) / read(work) on this test's store's backend."""
    return store.backend


def test_insert_then_select_gives_the_rows_back_with_growing_ids(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("s1", title="Trip")])
        return rows.insert("messages", [_message("s1", f"u{i}", i, content=f"m{i}") for i in range(3)])

    ids = rows_of.write(work)
    assert len(ids) == 3 and ids == sorted(ids) and len(set(ids)) == 3
    got = rows_of.read(lambda rows: rows.select("messages", {"session_id": "s1"}, order=["id"]))
    assert [r["content"] for r in got] == ["m0", "m1", "m2"]
    assert [r["id"] for r in got] == ids
    assert got[0]["reasoning"] is None and got[0]["state"] == "active"
    session = rows_of.read(lambda rows: rows.select("sessions", {"id": "s1"}))[0]
    assert session["title"] == "Trip" and session["parent_session_id"] is None


def test_text_comes_back_exactly_as_given(rows_of):
    strange = "nul \x00 and \ufffe and \ufffe0 and é 字"

    def work(rows):
        rows.insert("sessions", [_session("s1")])
        rows.insert("messages", [_message("s1", "u", 1, content=strange, reasoning=strange)])

    rows_of.write(work)
    got = rows_of.read(lambda rows: rows.select("messages", {"content": strange}, columns=["content", "reasoning"]))
    assert got == [{"content": strange, "reasoning": strange}]


def test_conditions_select_what_they_say(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("s1")])
        rows.insert("messages", [_message("s1", f"u{i}", i, tool_name=None if i % 2 else f"t{i}")
                                 for i in range(1, 7)])

    rows_of.write(work)

    def seqs(where, **options):
        return [r["seq"] for r in rows_of.read(lambda rows: rows.select("messages", where, columns=["seq"],
                                                                         order=["seq"], **options))]

    assert seqs({"seq": above(4)}) == [5, 6]
    assert seqs({"seq": below(3)}) == [1, 2]
    assert seqs({"seq": at_least(5)}) == [5, 6]
    assert seqs({"seq": at_most(2)}) == [1, 2]
    assert seqs({"seq": other_than(3), "session_id": "s1"}) == [1, 2, 4, 5, 6]
    assert seqs({"uid": one_of(["u2", "u5", "nope"])}) == [2, 5]
    assert seqs({"uid": one_of([])}) == []
    assert seqs({"tool_name": None}) == [1, 3, 5]
    assert seqs({"seq": above(1)}, limit=2) == [2, 3]
    got = rows_of.read(lambda rows: rows.select("messages", {}, columns=["seq"], order=["-seq"], limit=2))
    assert [r["seq"] for r in got] == [6, 5]


def test_starting_is_an_exact_prefix_not_a_pattern(rows_of):
    rows_of.write(lambda rows: rows.insert("sessions", [_session(s) for s in ("ab_c", "abXc", "a%z", "b")]))

    def ids(prefix):
        return sorted(r["id"] for r in rows_of.read(lambda rows: rows.select("sessions", {"id": starting(prefix)})))

    assert ids("ab_") == ["ab_c"]
    assert ids("a%") == ["a%z"]
    assert ids("ab") == ["abXc", "ab_c"]


def test_a_taken_key_or_unique_column_raises_taken_and_leaves_no_partial_rows(rows_of):
    rows_of.write(lambda rows: rows.insert("sessions", [_session("s1", title="Trip")]))

    with pytest.raises(Taken) as key:
        rows_of.write(lambda rows: rows.insert("sessions", [_session("s2"), _session("s1")]))
    assert (key.value.table, key.value.constraint) == ("sessions", "key")
    with pytest.raises(Taken) as title:
        rows_of.write(lambda rows: rows.insert("sessions", [_session("s3", title="Trip")]))
    assert title.value.constraint == "sessions_title"
    assert [r["id"] for r in rows_of.read(lambda rows: rows.select("sessions"))] == ["s1"]


def test_taken_within_a_unit_of_work_lets_it_go_on(rows_of):
    """A unit of work may meet Taken, handle it and write on (PostgreSQL would abort a
    transaction on a raw duplicate)."""
    def work(rows):
        rows.insert("sessions", [_session("s1", title="Trip"), _session("s2")])
        try:
            rows.update("sessions", {"id": "s2"}, set={"title": "Trip"})
        except Taken as exc:
            assert exc.constraint == "sessions_title"
        try:
            rows.insert("sessions", [_session("s1")])
        except Taken:
            pass
        rows.update("sessions", {"id": "s2"}, set={"title": "Trip #2"})
        return rows.insert("messages", [_message("s1", "u1", 1), _message("s1", "u1", 2), _message("s1", "u2", 2)],
                           skip_taken=True)

    ids = rows_of.write(work)
    assert ids[0] is not None and ids[1] is None and ids[2] is not None
    titles = {r["id"]: r["title"] for r in rows_of.read(lambda rows: rows.select("sessions"))}
    assert titles == {"s1": "Trip", "s2": "Trip #2"}


def test_update_sets_adds_and_raises_and_counts_what_matched(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("s1", message_count=2), _session("s2", message_count=5)])
        matched = rows.update("sessions", {"id": one_of(["s1", "s2"])}, add={"message_count": 3},
                              greatest={"last_activity_at": 10.0})
        rows.update("sessions", {"id": "s1"}, greatest={"last_activity_at": 5.0})
        rows.update("sessions", {"id": "s2"}, greatest={"last_activity_at": 20.0}, set={"title": "x"})
        return matched, rows.update("sessions", {"id": "nope"}, set={"title": "y"})

    assert rows_of.write(work) == (2, 0)
    got = {r["id"]: (r["message_count"], r["last_activity_at"], r["title"])
           for r in rows_of.read(lambda rows: rows.select("sessions"))}
    assert got == {"s1": (5, 10.0, None), "s2": (8, 20.0, "x")}


def test_a_unit_of_work_that_raises_leaves_nothing(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("s1")])
        raise RuntimeError("changed its mind")

    with pytest.raises(RuntimeError):
        rows_of.write(work)
    assert rows_of.read(lambda rows: rows.select("sessions")) == []


def test_delete_takes_a_sessions_rows_and_frees_its_children(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("p"), _session("c", parent_session_id="p", parent_relation="branch")])
        rows.insert("messages", [_message("p", "u", 1)])
        return rows.delete("sessions", {"id": "p"})

    assert rows_of.write(work) == 1
    assert rows_of.read(lambda rows: rows.select("messages")) == []
    assert rows_of.read(lambda rows: rows.select("sessions", columns=["id", "parent_session_id"])) == [
        {"id": "c", "parent_session_id": None}]


def test_count_totals_and_groups(rows_of):
    def work(rows):
        rows.insert("sessions", [_session("s1"), _session("s2")])
        rows.insert("messages", [_message("s1", "a", 1, token_count=3), _message("s1", "b", 2, token_count=4),
                                 _message("s2", "c", 1, token_count=10)])

    rows_of.write(work)
    read = rows_of.read
    assert read(lambda rows: rows.count("messages")) == {None: {"count": 3}}
    assert read(lambda rows: rows.count("messages", {"session_id": "s1"}, sums=["token_count"])) == {
        None: {"count": 2, "token_count": 7}}
    assert read(lambda rows: rows.count("messages", {"session_id": "none"}, sums=["token_count"])) == {
        None: {"count": 0, "token_count": 0}}
    assert read(lambda rows: rows.count("messages", by="session_id", sums=["token_count"])) == {
        "s1": {"count": 2, "token_count": 7}, "s2": {"count": 1, "token_count": 10}}


def test_inserted_order_follows_inserts_not_keys(rows_of):
    rows_of.write(lambda rows: rows.insert("sessions", [_session(s) for s in ("z", "a", "m")]))
    got = rows_of.read(lambda rows: rows.select("sessions", columns=["id", INSERTED], order=[INSERTED]))
    assert [r["id"] for r in got] == ["z", "a", "m"]
    after = got[0][INSERTED]
    later = rows_of.read(lambda rows: rows.select("sessions", {INSERTED: above(after)}, columns=["id"],
                                                  order=[INSERTED]))
    assert [r["id"] for r in later] == ["a", "m"]


def test_fencing_tokens_grow_past_every_committed_one(rows_of):
    first = rows_of.write(lambda rows: rows.next_token())

    def abandoned(rows):
        rows.next_token()
        raise RuntimeError("gone")

    with pytest.raises(RuntimeError):
        rows_of.write(abandoned)
    second = rows_of.write(lambda rows: [rows.next_token(), rows.next_token()])
    assert first < second[0] < second[1]


def test_a_column_or_table_not_declared_is_refused_before_any_sql(rows_of):
    with pytest.raises(ValueError, match="no column"):
        rows_of.read(lambda rows: rows.select("sessions", {"id; DROP TABLE sessions": 1}))
    with pytest.raises(ValueError, match="no table"):
        rows_of.read(lambda rows: rows.select("sqlite_master"))
