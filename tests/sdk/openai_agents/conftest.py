"""Each of the SDK's tests runs on the SDK's own SQLiteSession (the control) and on
SessiondbSession over SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.sdk.openai_agents.implementation import CURRENT

collect_ignore = ["test_responses.py"]  # the SDK's helpers (get_text_message), not a session test

_INTERNALS = "examines SQLiteSession's internals (its sqlite3 connections, locks or rows written past it)"
_SUBCLASSED = ("subclasses SQLiteSession to gate its writes; the fixture builds a SessiondbSession in its place, "
               "so the subclass's gates never run")
#: The SDK's tests that examine its own class, not the session protocol (docs/adapters/sdk-suites.md).
NOT_APPLICABLE = {
    "test_sqlite_session_close_closes_worker_thread_connections": _INTERNALS,
    "test_sqlite_session_close_retries_quarantined_connection": _INTERNALS,
    "test_sqlite_session_failed_add_items_releases_write_lock": _INTERNALS,
    "test_sqlite_session_failed_clear_session_rolls_back": _INTERNALS,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _INTERNALS,
    "test_sqlite_session_file_lock_is_shared_across_instances": _INTERNALS,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _INTERNALS,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _INTERNALS,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _INTERNALS,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _INTERNALS,
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _INTERNALS,
    "test_sqlite_session_rollback_failure_evicts_connection": _INTERNALS,
    "test_sqlite_session_closed_rejects_empty_add_items":
        "matches SQLiteSession's own error text; SessiondbSession raises StoreClosed",
    # OpenAIResponsesCompactionSession's tests over a session that injects failures
    "test_run_compaction_restores_history_when_cancelled_again_during_restore":
        "reads the SDK's list session's own list (self._items)",
    "test_cancel_restore_waits_for_mutation_lock_before_newer_writes": _SUBCLASSED,
    "test_exception_restore_drains_when_compaction_is_cancelled": _SUBCLASSED,
}
#: Upstream tests that fail on the SDK's own class at the installed release (the vendored
#: file is of an earlier one), skipped for every implementation.
NOT_THIS_RELEASE = {
    "test_deferred_compaction_persists_across_tool_turns":
        "written for openai-agents 0.22.0: at 0.24.0 the SDK's own list session never reaches compact",
}


@pytest.fixture(autouse=True, params=["SQLiteSession", "sessiondb-sqlite", "sessiondb-postgresql"])
def implementation(request, tmp_path):
    if request.node.originalname in NOT_THIS_RELEASE:
        pytest.skip(f"not at this release: {NOT_THIS_RELEASE[request.node.originalname]}")
    if request.param != "SQLiteSession" and request.node.originalname in NOT_APPLICABLE:
        pytest.skip(f"not applicable: {NOT_APPLICABLE[request.node.originalname]}")
    options = {}
    if request.param == "sessiondb-postgresql":
        options = {"url": request.getfixturevalue("pg_server").url(), "schema": request.getfixturevalue("pg_schema")}
    opened: list = []
    CURRENT.append((request.param, options, tmp_path, opened))
    yield request.param
    CURRENT.pop()
    for session in opened:
        session.close()

