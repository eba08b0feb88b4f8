"""How the SQLite search index (its own file) follows what the store logs (rows moved to new
ids and sessions, edited text), indexes rows stored before the search migration, ranks
within its window, keeps trigrams for CJK runs only, and serves Latin substrings by a
scan. The search contract itself is sessiondb/testing/contract/test_search.py."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import apsw
import pytest

import sessiondb
from sessiondb.store.sqlite import migrations, search as search_module
from sessiondb.store.sqlite.index.coverage import contents, differences
from sessiondb.store.sqlite.index import matrix as matrix_module
from sessiondb.store.sqlite.index import schema as index_schema
from sessiondb.store.sqlite.index.schema import open_index
from sessiondb.testing.contract.test_meaning import Concepts


@pytest.fixture
def store(tmp_path):
    with sessiondb.open_store(tmp_path / "search.db") as s:
        yield s


def sql(store, statement, params=()):
    """A write the way internal write paths (compaction, rewind) make one: on the store's writer."""
    return store.backend._file.writer.run(lambda conn: conn.execute(statement, params).fetchall())


def check_indexes(store):
    """The index, caught up, holds exactly what one rebuilt from nothing would."""
    assert differences(store.backend.path) == []


def uids(hits):
    return [h.uid for h in hits]


def test_the_indexes_follow_rows_moved_to_new_ids_and_sessions(store):
    store.append(store.create_session("telegram").id, [
        {"uid": "plan", "role": "user", "content": "Three days of temples."},
        {"uid": "swap", "role": "user", "content": "Something quieter instead."},
    ])
    other = store.create_session("cli", title="Child")
    # What compaction does: archive rows, re-sequence the tail under new ids elsewhere.
    sql(store, "UPDATE messages SET id = id + 1000, session_id = ? WHERE uid = 'swap'", (other.id,))
    sql(store, "UPDATE messages SET content = 'now about osaka' WHERE uid = 'plan'")
    [hit] = store.search("quieter")
    assert hit.session_id == other.id and hit.message_id > 1000
    assert store.search("temples") == [] and uids(store.search("osaka")) == ["plan"]
    check_indexes(store)


def test_rows_stored_before_the_search_migration_are_indexed(tmp_path):
    path = tmp_path / "old.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL) STRICT")
    migrations._core(conn)
    conn.execute("INSERT INTO schema_migrations VALUES ('0001_core', 0)")
    conn.execute("INSERT INTO sessions(id, source, started_at) VALUES ('old', 'cli', 0)")
    conn.execute("INSERT INTO messages(session_id, uid, seq, role, content, timestamp, state) VALUES "
                 "('old', 'a', 1, 'user', 'legacy harbour talk', 1, 'active'), "
                 "('old', 'b', 2, 'user', 'rewound harbour talk', 2, 'rewound')")
    conn.close()
    with sessiondb.open_store(path) as store:
        assert uids(store.search("harbour")) == ["a"]
        check_indexes(store)


def test_hits_are_ranked_among_the_newest_matches(store, monkeypatch):
    s = store.create_session("cli")
    # The oldest message is the most relevant (shortest); newest first, the window of 2 ends at "b".
    store.append(s.id, [{"uid": "a", "role": "user", "content": "marmalade"},
                        {"uid": "b", "role": "user", "content": "marmalade on toast with butter and tea"},
                        {"uid": "c", "role": "user", "content": "marmalade on toast with butter, tea and jam"}])
    assert uids(store.search("marmalade"))[0] == "a"
    monkeypatch.setattr(search_module, "RANK_WINDOW", 2)
    assert uids(store.search("marmalade")) == ["b", "c"]
    assert uids(store.search("marmalade", session_id=s.id, role="user")) == ["b", "c"]


def test_latin_substrings_are_a_scan_that_folds_case_and_accents(store):
    # Substring search over text outside the CJK scripts is a scan with LIKE, not a trigram
    # index (since the index left the append path), over text folded as PostgreSQL's is.
    store.append(store.create_session("cli").id, [
        {"uid": "plan", "role": "user", "content": "Temples and café food."},
        {"uid": "day1", "role": "assistant", "content": "Fushimi Inari at dawn."},
        {"uid": "swap", "role": "user", "content": "Fushimi was crowded."},
    ])
    assert uids(store.search("USHIM", substring=True)) == ["swap", "day1"]  # newest first, unranked
    assert uids(store.search("café", substring=True)) == ["plan"]
    assert uids(store.search("CAFE FOOD", substring=True)) == ["plan"]  # as words fold them
    assert uids(store.search("cafe food")) == ["plan"]


def test_only_the_cjk_runs_of_a_message_go_into_the_trigram_index(store):
    s = store.create_session("cli")
    store.append(s.id, [{"uid": "en", "role": "user", "content": "plain english harbour text"},
                        {"uid": "mixed", "role": "user", "content": "meet at 東京駅 tomorrow morning"}])
    assert uids(store.search("東京駅")) == ["mixed"] and uids(store.search("harbour")) == ["en"]
    assert store.search("東京駅 tomorrow") != [] and store.search("駅 tom", substring=True) != []
    conn = open_index(store.backend.path, patience=5.0, vfs=None)
    try:
        trigrams = {term for term, *_ in contents(conn)["cjk"]}
    finally:
        conn.close()
    assert trigrams == {"東京駅"}  # no trigram of the English words, nor of the one message without CJK


def test_an_index_over_a_swept_log_is_kept_at_the_next_open(tmp_path):
    # optimize sweeps the log rows the index applied; the index is not thereby ahead of the
    # store, and the next open keeps it instead of starting it over.
    path = tmp_path / "state.db"
    with sessiondb.open_store(path) as s:
        for name in ("kept", "gone"):
            s.append(s.create_session("cli", session_id=name).id, {"role": "user", "content": f"{name} words"})
        s.delete_session("gone")
        s.optimize()
    conn = open_index(path, patience=5.0, vfs=None)
    before = conn.execute("SELECT key, value FROM state WHERE key IN ('indexed_to', 'touched_to')").fetchall()
    conn.close()
    with sessiondb.open_store(path):
        conn = open_index(path, patience=5.0, vfs=None)
        after = conn.execute("SELECT key, value FROM state WHERE key IN ('indexed_to', 'touched_to')").fetchall()
        conn.close()
    assert dict(before)["touched_to"] > 0 and after == before


def test_a_text_changed_after_the_catch_up_is_not_found_by_what_the_index_holds(store, monkeypatch):
    # The search catches the index up, then reads in a new snapshot: a write in between
    # that changes an indexed text is logged, and the index's entry for that id (the old
    # text) must not make a hit of the row as it is now.
    indexer = store.backend._file.indexer
    monkeypatch.setattr(indexer.wanted, "is_set", lambda: True)  # writes leave it: only the search catches up
    store.append(store.create_session("cli").id, [{"uid": "plan", "role": "user", "content": "kyoto temples"}])
    catch_up, changed = indexer.catch_up, []

    def then_the_text_changes(*args, **kwargs):
        catch_up(*args, **kwargs)
        if not changed:
            sql(store, "UPDATE messages SET content = 'osaka castle' WHERE uid = 'plan'")
            changed.append(True)

    monkeypatch.setattr(indexer, "catch_up", then_the_text_changes)
    assert store.search("kyoto") == []
    assert changed, "the search never caught the index up"
    assert uids(store.search("osaka")) == ["plan"] and store.search("kyoto") == []
    check_indexes(store)


def test_an_index_of_the_previous_layout_gains_the_stems_and_is_indexed_again(tmp_path):
    path = tmp_path / "upgraded.db"
    with sessiondb.open_store(path) as store:
        store.append(store.create_session("cli").id, [
            {"uid": "it", "role": "user", "content": "Caroline researched adoption agencies 我用Python写代码"}])
        assert uids(store.search("temples")) == []  # the index is made and caught up
    # The layout an earlier release wrote: no stems index, text indexed as stored.
    conn = apsw.Connection(f"{path}-search")
    conn.execute("DROP TABLE stems; DROP TABLE thoughts; PRAGMA user_version=2")
    conn.close()
    with sessiondb.open_store(path) as store:
        assert uids(store.recall("What did Caroline research?")) == ["it"]
        assert uids(store.search("Python")) == ["it"]  # indexed again, CJK runs set apart
        check_indexes(store)


def test_an_index_without_the_thoughts_gains_them_and_finds_reasoning(tmp_path):
    path = tmp_path / "upgraded.db"
    with sessiondb.open_store(path) as store:
        store.append(store.create_session("cli").id, [
            {"uid": "it", "role": "assistant", "content": "Done.", "reasoning": "The zeppelin config was stale."}])
        assert uids(store.search("temples")) == []  # the index is made and caught up
    # The layout the release before wrote: no thoughts index.
    conn = apsw.Connection(f"{path}-search")
    conn.execute("DROP TABLE thoughts; PRAGMA user_version=3")
    conn.close()
    with sessiondb.open_store(path) as store:
        assert uids(store.search("zeppelin", include_reasoning=True)) == ["it"]
        assert uids(store.search("zeppelin")) == []
        check_indexes(store)


def test_an_index_without_vectors_gains_them_and_keeps_its_words(tmp_path):
    path = tmp_path / "upgraded.db"
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"uid": "dog", "role": "user", "content": "I adopted a puppy last week"}])
        assert uids(store.search("puppy")) == ["dog"]
    # The layout the release before wrote: no vectors, no marks of theirs.
    conn = apsw.Connection(f"{path}-search")
    conn.execute("DROP TABLE vectors; DELETE FROM state WHERE key IN ('embedded_to', 'embedded_touched_to', 'space');"
                 "PRAGMA user_version=4")
    conn.close()
    upgraded = open_index(path, patience=5.0, vfs=None)  # the upgrade alone, no catch-up after it
    assert upgraded.execute("SELECT value FROM state WHERE key = 'indexed_to'").fetchone()[0] > 0  # words kept
    assert upgraded.execute("PRAGMA user_version").fetchone()[0] == index_schema.VERSION
    upgraded.close()
    with sessiondb.open_store(path, embedder=Concepts()) as store:
        hit = store.recall("Which pet do I have?")[0]
        assert (hit.uid, hit.found_by) == ("dog", "meaning")
        check_indexes(store)


def test_the_index_file_deleted_is_built_again_with_its_vectors_and_recalls_the_same(tmp_path):
    db = tmp_path / "state.db"
    texts = ["I adopted a puppy last week", "My sister plays the violin", "We went hiking in the Alps"]
    questions = ["Which pet do I have?", "music", "the violin", "mountain"]
    with sessiondb.open_store(db, embedder=Concepts()) as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"uid": f"m{i}", "role": "user", "content": text} for i, text in enumerate(texts)])
        before = {q: [(h.uid, h.found_by, h.score) for h in store.recall(q)] for q in questions}
    for suffix in index_schema.FILES:
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with sessiondb.open_store(db, embedder=Concepts()) as store:
        after = {q: [(h.uid, h.found_by, h.score) for h in store.recall(q)] for q in questions}
    assert after == before and before["Which pet do I have?"][0][:2] == ("m0", "meaning")


def test_a_recall_whose_filters_keep_few_of_the_candidates_ranks_every_vector_they_keep(tmp_path, monkeypatch):
    monkeypatch.setattr(matrix_module, "CANDIDATES", 2)
    monkeypatch.setattr(search_module, "CANDIDATES", 2)
    with sessiondb.open_store(tmp_path / "state.db", embedder=Concepts()) as store:
        crowd, alone = store.create_session("cli").id, store.create_session("cli").id
        store.append(crowd, [{"uid": f"c{i}", "role": "user", "content": f"my dog {i}"} for i in range(5)])
        store.append(alone, [{"uid": "a", "role": "user", "content": "lunch, and the puppy"},
                             {"uid": "b", "role": "user", "content": "the violin"}])
        assert {h.uid for h in store.recall("Which pet?")[:2]} <= {f"c{i}" for i in range(5)}  # the crowd's
        hits = store.recall("Which pet?", session_id=alone)
        assert [h.uid for h in hits][0] == "a" and hits[0].found_by == "meaning"


def test_a_recall_multiplies_its_meaning_on_a_thread_of_its_own_beside_the_words(tmp_path, monkeypatch):
    """The product with every vector is begun before the words are looked for and read
    after, so the two legs overlap (index/matrix.py)."""
    monkeypatch.setattr(matrix_module, "CANDIDATES", 2)
    monkeypatch.setattr(search_module, "CANDIDATES", 2)
    numpy = matrix_module.numpy()
    multiplied_on = []
    product = numpy.einsum

    def einsum(*args, **kwargs):
        multiplied_on.append(threading.current_thread().name)
        return product(*args, **kwargs)

    monkeypatch.setattr(numpy, "einsum", einsum)
    with sessiondb.open_store(tmp_path / "state.db", embedder=Concepts()) as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"uid": f"m{i}", "role": "user", "content": f"my dog {i}"} for i in range(5)])
        assert store.recall("Which pet?")[0].found_by in ("meaning", "words and meaning")
    assert multiplied_on and all(name.startswith("sessiondb-vectors") for name in multiplied_on)


def test_a_forked_child_makes_its_own_threads_for_the_products(tmp_path, monkeypatch):
    """A child has none of its parent's threads: a pool carried over would take a product
    and never run it."""
    monkeypatch.setattr(matrix_module, "CANDIDATES", 2)
    monkeypatch.setattr(search_module, "CANDIDATES", 2)
    with sessiondb.open_store(tmp_path / "state.db", embedder=Concepts()) as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"uid": f"m{i}", "role": "user", "content": f"my dog {i}"} for i in range(5)])
        store.recall("Which pet?")
    assert matrix_module._pool is not None  # the parent's, made by its recall
    child = os.fork()
    if child == 0:
        os._exit(0 if matrix_module._pool is None else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
