"""What an operator sees (sessiondb/telemetry.py), read from the OpenTelemetry SDK's
in-memory span exporter and metric reader: no network, no global provider touched."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest

import sessiondb
from sessiondb import NotFound, telemetry

sdk_trace = pytest.importorskip("opentelemetry.sdk.trace")
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import StatusCode  # noqa: E402

SECRET = "marmalade-in-the-vault"


@pytest.fixture
def otel():
    """sessiondb's telemetry on SDK providers of this test's own: (spans, metrics())."""
    spans = InMemorySpanExporter()
    tracer_provider = sdk_trace.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    telemetry.instrument(tracer_provider=tracer_provider, meter_provider=MeterProvider(metric_readers=[reader]))
    yield spans, lambda: _points(reader)
    telemetry.instrument()


def _points(reader: InMemoryMetricReader) -> dict[str, list]:
    """Each metric's data points by name, from one collection."""
    found: dict[str, list] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def _values(attributes) -> list[str]:
    return [str(v) for v in attributes.values()]


def test_appends_searches_compactions_maintenance_and_the_doctor_are_spans_without_content(otel, tmp_path):
    spans, _ = otel
    path = tmp_path / "state.db"
    with sessiondb.open_store(path) as store:
        sid = store.create_session("cli", title=SECRET).id
        store.append(sid, [{"role": "user", "content": f"the {SECRET} is here"},
                           {"role": "assistant", "content": "noted"}])
        assert len(store.search("marmalade")) == 1
        store.recall("where is the marmalade?")
        lease = store.begin_compaction(sid, holder="summariser")
        store.commit_compaction(lease, [{"role": "assistant", "content": "a summary"}])
        store.optimize()
        store.verify()
    sessiondb.open_doctor(path).examine()
    finished = {span.name: span for span in spans.get_finished_spans()}
    assert {"update_memory main", "search_memory main", "sessiondb begin_compaction", "sessiondb commit_compaction",
            "sessiondb optimize", "sessiondb verify", "sessiondb doctor.examine"} <= set(finished)
    append = finished["update_memory main"].attributes
    assert append["gen_ai.operation.name"] == "update_memory" and append["gen_ai.provider.name"] == "sessiondb"
    assert append["db.system.name"] == "sqlite" and append["gen_ai.memory.store.id"] == "main"
    assert append["gen_ai.memory.record.count"] == 2
    searches = [s for s in spans.get_finished_spans() if s.name == "search_memory main"]
    assert sorted(s.attributes["sessiondb.operation"] for s in searches) == ["recall", "search"]
    for span in spans.get_finished_spans():  # never the text, the title, a query or a session's id
        assert not any(SECRET in v or "marmalade" in v or sid in v for v in _values(span.attributes)), span.name


def test_a_refused_call_is_an_error_span_naming_its_kind(otel, tmp_path):
    spans, points = otel
    with sessiondb.open_store(tmp_path / "state.db") as store, pytest.raises(NotFound):
        store.append("no-such-session", [{"role": "user", "content": "hello"}])
    [span] = [s for s in spans.get_finished_spans() if s.name == "update_memory main"]
    assert span.status.status_code is StatusCode.ERROR and span.attributes["error.type"] == "NotFound"
    [failed] = [p for p in points()["sessiondb.operation.duration"] if p.attributes.get("error.type")]
    assert failed.attributes["sessiondb.operation"] == "append" and failed.count == 1


def test_append_latency_group_commits_and_the_gauges_are_metrics_without_content(otel, tmp_path):
    _, points = otel
    with sessiondb.open_store(tmp_path / "state.db") as store:
        sid = store.create_session("cli").id
        for n in range(3):
            store.append(sid, [{"role": "user", "content": f"{SECRET} {n}"}])
        found = points()
        [appends] = [p for p in found["sessiondb.operation.duration"] if p.attributes["sessiondb.operation"] == "append"]
        assert appends.count == 3 and appends.attributes["db.system.name"] == "sqlite" and appends.sum > 0
        groups = found["sessiondb.commit.group_size"]
        assert sum(p.count for p in groups) >= 4 and {p.attributes["db.system.name"] for p in groups} == {"sqlite"}
        [depth] = found["sessiondb.spool.depth"]
        assert depth.value == 0 and depth.attributes == {"db.system.name": "sqlite", "gen_ai.memory.store.id": "main"}
        assert [p.value for p in found["sessiondb.index.lag.messages"]] in ([0], [1], [2], [3])
        assert "sessiondb.pool.connections.used" not in found  # an embedded store has no pool
        for metric in found.values():
            for point in metric:
                assert not any(SECRET in v or sid in v for v in _values(point.attributes))
    assert "sessiondb.spool.depth" not in points()  # a closed handle reports nothing


def test_the_index_lag_counts_the_messages_the_search_index_has_not_taken_in(otel, tmp_path, monkeypatch):
    _, points = otel
    with sessiondb.open_store(tmp_path / "state.db") as store:
        # Writes leave the background indexer asleep: only a search catches the index up.
        monkeypatch.setattr(store.backend._file.indexer.wanted, "is_set", lambda: True)
        sid = store.create_session("cli").id
        store.append(sid, [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
        found = points()
        assert [p.value for p in found["sessiondb.index.lag.messages"]] == [2]
        assert found["sessiondb.index.lag.duration"][0].value > 0
        store.search("one")  # a search catches the index up first
        assert [p.value for p in points()["sessiondb.index.lag.messages"]] == [0]
        assert [p.value for p in points()["sessiondb.index.lag.duration"]] == [0]


def test_a_new_connection_reaching_the_server_at_another_address_is_a_failover(otel):
    from sessiondb.store.postgres.connect import Database

    _, points = otel
    db = Database.__new__(Database)
    db.pooled, db.address, db.away = True, None, False  # pooled: _configure sets nothing on the fakes

    def connection(host):
        return SimpleNamespace(info=SimpleNamespace(host=host, port=5432))

    for host in ("db-a", "db-a", "db-b", "db-b"):
        db._configure(connection(host))
    [failovers] = points()["sessiondb.failovers"]
    assert failovers.value == 1 and failovers.attributes == {"db.system.name": "postgresql"}


def test_without_the_opentelemetry_api_every_call_works_and_nothing_is_recorded(tmp_path):
    script = (
        "import sys; sys.modules['opentelemetry'] = None\n"  # an import of it now fails, as when it is absent
        "import sessiondb\n"
        "from sessiondb import telemetry\n"
        f"with sessiondb.open_store({str(tmp_path / 'state.db')!r}) as store:\n"
        "    sid = store.create_session('cli').id\n"
        "    store.append(sid, [{'role': 'user', 'content': 'hello there'}])\n"
        "    assert len(store.search('hello')) == 1\n"
        "assert not telemetry.available()\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_a_server_store_reports_its_pool_its_group_commits_and_a_retried_unit_of_work(otel, pg_server, pg_schema):
    import psycopg

    from sessiondb.store.postgres.connect import client_name

    spans, points = otel
    url = pg_server.url()
    with sessiondb.open_store(url, schema=pg_schema) as store:
        sid = store.create_session("cli").id
        store.append(sid, [{"uid": "before", "role": "user", "content": SECRET}])
        found = points()
        assert [p.value for p in found["sessiondb.pool.connections.used"]] == [0]
        assert [p.value for p in found["sessiondb.pool.connections.idle"]] == [1]
        assert [p.value for p in found["sessiondb.pool.requests.waiting"]] == [0]
        assert {p.attributes["db.system.name"] for p in found["sessiondb.commit.group_size"]} == {"postgresql"}
        assert "sessiondb.index.lag.messages" not in found  # the words are written with the message
        with psycopg.connect(url, autocommit=True) as admin:  # what an idle timeout or a pooler does
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                          (client_name(pg_schema),))
        store.append(sid, [{"uid": "after", "role": "user", "content": "still here"}])
        [retries] = points()["sessiondb.retries"]
        assert retries.value >= 1 and retries.attributes["db.system.name"] == "postgresql"
    appends = [s for s in spans.get_finished_spans() if s.name == "update_memory main"]
    assert [s.attributes["db.system.name"] for s in appends] == ["postgresql", "postgresql"]
