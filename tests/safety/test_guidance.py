"""Classify before you advise (S-17), and advise for the right store (S-18)."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from sessiondb.errors import Cause, NotFound, StoreBusy, classify
from sessiondb.guidance import explain, for_error

DEFAULT_HOME = Path.home() / ".sessiondb"
CUSTOM_HOME = Path("/srv/agents/memory")

STORES = [
    pytest.param(DEFAULT_HOME / "state.db", None, DEFAULT_HOME, "", id="default-profile"),
    pytest.param(DEFAULT_HOME / "profiles" / "work" / "state.db", "work", DEFAULT_HOME, " -p work", id="named-profile"),
    pytest.param(CUSTOM_HOME / "profiles" / "ops" / "state.db", "ops", CUSTOM_HOME,
                 f" --home {CUSTOM_HOME} -p ops", id="custom-home"),
]


def test_the_cause_names_are_exactly_the_documented_ones():
    assert [c.value for c in Cause] == [
        "locked", "disk_full", "read_only", "corrupt", "fts_index", "replaced", "deleted_wal",
        "compression_busy", "compression_closed", "unreachable", "unavailable", "auth_failed",
        "server_disk_full", "standby", "statement_timeout", "pooler_mode", "unknown",
    ]


@pytest.mark.parametrize("cause", list(Cause))
@pytest.mark.parametrize("db, profile, home, flags", STORES)
def test_every_cause_names_the_affected_store_and_its_profile(cause, db, profile, home, flags):
    advice = explain(cause, db_path=db, profile=profile, home=home)
    text = advice.message + " " + advice.detail
    assert advice.message.endswith(".") and advice.detail
    for command in (part for part in text.split("`")[1::2] if part.startswith("sessiondb")):
        assert command.startswith(f"sessiondb{flags} "), command
    if "{" in text or "}" in text:
        pytest.fail(f"unfilled placeholder in {text!r}")
    if cause in (Cause.CORRUPT, Cause.REPLACED, Cause.DELETED_WAL, Cause.DISK_FULL, Cause.LOCKED):
        assert str(db) in advice.message
    other_stores = {str(p.values[0]) for p in STORES} - {str(db)}
    assert not any(other in text for other in other_stores)


def test_the_closed_by_compaction_advice_never_mentions_the_disk():
    advice = explain(Cause.COMPRESSION_CLOSED, db_path=Path("/h/state.db"), profile=None)
    assert "refresh" in advice.message
    assert "disk" not in (advice.message + advice.detail).lower()


def test_a_malformed_database_is_corruption_not_a_full_disk():
    assert classify(Exception("database disk image is malformed")) is Cause.CORRUPT
    assert classify(Exception("database or disk is full")) is Cause.DISK_FULL


def test_a_result_code_outranks_the_message_text():
    full = apsw.FullError("database disk image is malformed")
    full.extendedresult = 13  # SQLITE_FULL
    assert classify(full) is Cause.DISK_FULL


def coded(kind: type[apsw.Error], text: str, code: int) -> apsw.Error:
    exc = kind(text)
    exc.extendedresult = code
    return exc


INDEX_NAMED = 'fts5: corruption found reading blob 137 from table "messages_fts"'
# (the error, the cause): result codes with texts that say something else. The code decides.
LETTER_OF_THE_LAW = [
    pytest.param(coded(apsw.CorruptError, INDEX_NAMED, 11), Cause.CORRUPT, id="bare-corrupt-naming-the-index"),
    pytest.param(coded(apsw.CorruptError, "malformed inverted index for FTS5 table messages_trigram_data", 11),
                 Cause.CORRUPT, id="bare-corrupt-naming-a-shadow-table"),
    pytest.param(coded(apsw.NotADBError, "file is not a database: messages_fts", 26), Cause.CORRUPT,
                 id="notadb-naming-the-index"),
    pytest.param(coded(apsw.CorruptError, "database disk image is malformed", 779), Cause.CORRUPT,
                 id="corrupt-index-extended-code"),
    pytest.param(coded(apsw.CorruptError, "database disk image is malformed", 267), Cause.FTS_INDEX,
                 id="corrupt-vtab-with-plain-text"),
    pytest.param(coded(apsw.CorruptError, "database or disk is full", 11), Cause.CORRUPT,
                 id="corrupt-code-with-full-disk-text"),
    pytest.param(coded(apsw.FullError, "database disk image is malformed", 13), Cause.DISK_FULL,
                 id="full-code-with-malformed-text"),
    pytest.param(coded(apsw.ReadOnlyError, "database disk image is malformed in messages_fts", 8), Cause.READ_ONLY,
                 id="readonly-code-with-index-corruption-text"),
    pytest.param(coded(apsw.BusyError, "no space left on device", 5), Cause.LOCKED, id="busy-code-with-enospc-text"),
    pytest.param(coded(apsw.IOError, "disk I/O error", 4874), Cause.DISK_FULL, id="shm-size-extended-code"),
    pytest.param(coded(apsw.SQLError, 'corruption in "messages_fts" reported', 1), Cause.CORRUPT,
                 id="generic-code-with-index-corruption-text-fails-closed"),
    # No result code at all: the text is all there is, corruption before disk.
    pytest.param(Exception(INDEX_NAMED), Cause.FTS_INDEX, id="uncoded-corruption-naming-the-index"),
    pytest.param(Exception("database disk image is malformed"), Cause.CORRUPT, id="uncoded-malformed-mentions-disk"),
    pytest.param(Exception("messages_fts: database or disk is full"), Cause.DISK_FULL,
                 id="uncoded-full-disk-naming-the-index"),
]


@pytest.mark.parametrize("exc, cause", LETTER_OF_THE_LAW)
def test_a_result_code_decides_the_cause_whatever_the_text_says(exc, cause):
    assert classify(exc) is cause


def test_index_scoped_corruption_is_the_index_not_the_database():
    vtab = apsw.CorruptError("database disk image is malformed")
    vtab.extendedresult = 267  # SQLITE_CORRUPT_VTAB
    assert classify(vtab) is Cause.FTS_INDEX
    assert classify(Exception('fts5: corruption found reading blob 137 from table "messages_fts"')) is Cause.FTS_INDEX
    bare = apsw.CorruptError("database disk image is malformed")
    bare.extendedresult = 11
    assert classify(bare) is Cause.CORRUPT


def test_os_errors_are_classified_by_errno():
    assert classify(OSError(28, "No space left on device")) is Cause.DISK_FULL
    assert classify(OSError(30, "Read-only file system")) is Cause.READ_ONLY


def test_a_real_sqlite_error_is_classified_through_the_sessiondb_error_that_wraps_it():
    conn = apsw.Connection(":memory:")
    conn.execute("PRAGMA query_only=1")
    with pytest.raises(apsw.Error) as caught:
        conn.execute("CREATE TABLE t(x)")
    assert classify(caught.value) is Cause.READ_ONLY
    assert classify(StoreBusy("waited too long")) is Cause.LOCKED


def test_errors_outside_the_table_keep_their_own_message():
    from sessiondb.errors import NotFound

    advice = for_error(NotFound("no session 'x' in this store"), db_path=Path("/h/state.db"), profile=None)
    assert advice.message == "no session 'x' in this store" and advice.http_status == 404


def test_a_caller_error_quoting_alarming_words_keeps_its_own_cause():
    assert classify(NotFound("no session 'readonly database disk is full'")) is Cause.UNKNOWN


def test_a_store_outside_a_homes_layout_is_named_as_it_was_opened():
    assert "`sessiondb --store '/data/agent.db' doctor`" in explain(
        Cause.CORRUPT, db_path=Path("/data/agent.db"), profile=None).message
    server = explain(Cause.UNKNOWN, db_path="postgresql://agent@db.internal/memory#sessiondb_work", profile="work")
    assert "postgresql://agent@db.internal/memory#sessiondb_work" in server.message
    assert "`sessiondb --store 'postgresql://agent@db.internal/memory' -p work doctor`" in server.message
