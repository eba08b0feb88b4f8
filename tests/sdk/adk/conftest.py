"""ADK's own session-service and memory-service tests, run on the SDK's own services (the
controls) and on sessiondb's adapters over SQLite and PostgreSQL.

The tests themselves are vendored in upstream/, as taken at the commits upstream.txt
names (README.md); only the fixture that builds the service is swapped
(implementation.py). Every upstream test is classified below or the run stops: one that
takes the `session_service` fixture runs on every session control; one that builds ADK's
database service itself to test a behaviour every service promises runs on that one
(ON_DATABASE); one that examines a class's internals runs on the SDK's class only
(NOT_APPLICABLE, with why; docs/adapters/sdk-suites.md lists them).
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from tests.sdk.adk import implementation as swaps
from tests.sdk.adk.implementation import CURRENT, SESSION_CONTROLS, SESSIONDB, Run

UPSTREAM = Path(__file__).resolve().parent / "upstream"
SESSIONS, MEMORY = "test_session_service.py", "test_in_memory_memory_service.py"

#: Session tests that build DatabaseSessionService through get_session_service to test what
#: every session service promises (its stale-session check).
ON_DATABASE = {
    "test_append_event_to_stale_session",
    "test_append_event_concurrent_stale_sessions_reject_stale_writer",
}

_DATABASE = "examines DatabaseSessionService itself (its engine, SQL session factory, tables or rows)"
_SQLITE = "examines SqliteSessionService's URL handling"
_MEMORY = "reads InMemoryMemoryService's private event table (_session_events)"
#: The upstream tests that examine one class's internals, not the service contract.
NOT_APPLICABLE = {
    "test_database_session_service_enables_pool_pre_ping_by_default": _DATABASE,
    "test_database_session_service_strips_timezone_for_dialect": _DATABASE,
    "test_database_session_service_preserves_timezone_for_other_dialects": _DATABASE,
    "test_database_session_service_respects_pool_pre_ping_override": _DATABASE,
    "test_database_session_service_creates_read_only_engine_for_spanner": _DATABASE,
    "test_database_session_service_creates_read_only_engine_for_other_dialects": _DATABASE,
    "test_database_session_service_get_session_uses_read_only_factory": _DATABASE,
    "test_database_session_service_list_sessions_uses_read_only_factory": _DATABASE,
    "test_append_event_raises_if_app_state_row_missing": _DATABASE,
    "test_append_event_raises_if_user_state_row_missing": _DATABASE,
    "test_append_event_allows_timestamp_drift_for_current_session": _DATABASE,
    "test_append_event_allows_markerless_current_session": _DATABASE,
    "test_create_session_calls_rollback_on_commit_failure": _DATABASE,
    "test_append_event_calls_rollback_on_commit_failure": _DATABASE,
    "test_append_event_reads_storage_revision_before_commit": _DATABASE,
    "test_create_session_reads_storage_revision_before_commit": _DATABASE,
    "test_delete_session_calls_rollback_on_commit_failure": _DATABASE,
    "test_service_recovers_after_multiple_failures": _DATABASE,
    "test_concurrent_prepare_tables_no_race_condition": _DATABASE,
    "test_prepare_tables_serializes_schema_detection_and_creation": _DATABASE,
    "test_get_or_create_state_returns_existing_row": _DATABASE,
    "test_get_or_create_state_creates_new_row": _DATABASE,
    "test_get_or_create_state_handles_race_condition": _DATABASE,
    "test_create_session_sequential_same_app_name": _DATABASE,
    "test_prepare_tables_idempotent_after_creation": _DATABASE,
    "test_public_prepare_tables_eager_initialization": _DATABASE,
    "test_append_event_locks_only_scopes_with_deltas": _DATABASE,
    "test_database_session_service_visible_in_module_namespace": _DATABASE,
    "test_sqlite_session_service_accepts_sqlite_urls": _SQLITE,
    "test_sqlite_session_service_preserves_uri_query_parameters": _SQLITE,
    "test_sqlite_session_service_accepts_absolute_sqlite_urls": _SQLITE,
    "test_append_event_when_session_is_same_ref_as_storage_session":
        "hands InMemorySessionService's own stored session object (its `sessions` table) back to it",
    "test_vertex_ai_session_service_raises_not_implemented_for_get_user_state":
        "examines VertexAiSessionService (google-adk[gcp], not installed: skipped on the SDK too)",
    "test_add_session_to_memory": _MEMORY,
    "test_add_events_to_memory_with_explicit_events": _MEMORY,
    "test_add_events_to_memory_without_session_id_uses_default_bucket": _MEMORY,
    "test_add_events_to_memory_alias_is_supported": _MEMORY,
    "test_add_events_to_memory_appends_without_replacing": _MEMORY,
    "test_add_events_to_memory_deduplicates_event_ids": _MEMORY,
    "test_add_session_with_no_events_to_memory": _MEMORY,
}


class _Swapped(pytest.Module):
    """An upstream module with the fixture that builds its service swapped, before pytest
    reads its fixtures (the module's own would win over any conftest's)."""

    def _getobj(self):
        module = super()._getobj()
        if self.path.name == SESSIONS:
            module.get_session_service = swaps.swapped_get_session_service(module.get_session_service)
            module.session_service = swaps.swapped_session_service(module)
        else:
            module.InMemoryMemoryService = swaps.InMemoryMemoryService
        return module


def pytest_pycollect_makemodule(module_path, parent):
    if module_path.parent == UPSTREAM:
        return _Swapped.from_parent(parent, path=module_path)
    return None


def pytest_generate_tests(metafunc):
    name, module = metafunc.function.__name__, metafunc.module.__name__
    if name in NOT_APPLICABLE:
        controls = ["InMemoryMemoryService"] if module.endswith("memory_service") else ["upstream"]
        metafunc.parametrize("implementation", controls, indirect=True)
    elif module.endswith("memory_service"):
        metafunc.parametrize("implementation", ["InMemoryMemoryService", *SESSIONDB], indirect=True)
    elif "session_service" in metafunc.fixturenames:
        metafunc.parametrize("implementation", [*SESSION_CONTROLS, *SESSIONDB], indirect=True)
    elif name in ON_DATABASE:
        metafunc.parametrize("implementation", ["DatabaseSessionService", *SESSIONDB], indirect=True)
    else:
        raise pytest.UsageError(f"ADK's {name} is not classified in tests/sdk/adk/conftest.py")


#: Upstream tests sessiondb's adapter fails, with why (docs/adapters/sdk-suites.md). Marked as expected
#: failures, strictly: one that starts to pass fails the run until it is taken off this list.
KNOWN_GAPS: dict[str, str] = {}


#: Upstream tests that need a module the `adk` extra does not install, skipped where it is missing.
NEEDS = {"test_vertex_ai_session_service_raises_not_implemented_for_get_user_state": "agentplatform"}


@pytest.fixture(autouse=True)
def implementation(request, tmp_path):
    if request.node.originalname in NEEDS:
        pytest.importorskip(NEEDS[request.node.originalname])
    gap = KNOWN_GAPS.get(request.node.originalname)
    if gap and request.param in SESSIONDB:
        request.node.add_marker(pytest.mark.xfail(reason=f"known gap: {gap}", strict=True))
    options = {}
    if request.param == "sessiondb-postgresql":
        options = {"url": request.getfixturevalue("pg_server").url(), "schema": request.getfixturevalue("pg_schema")}
    CURRENT.append(Run(request.param, options, tmp_path))
    yield request.param
    CURRENT.pop()


def pytest_configure(config):
    config.addinivalue_line("markers", "asyncio: ADK's async tests (pytest-asyncio there; run here below)")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ADK's `async def` tests in an event loop of their own, as pytest-asyncio does, and
    close the services they opened in that same loop (an async engine is bound to it)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    run = CURRENT[-1]

    async def test_then_close():
        try:
            await pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names})
        finally:
            for service in run.opened:
                close = getattr(service, "close", None)
                if close is not None:
                    await close()

    asyncio.run(test_then_close())
    return True
