"""Searches, recalls and listings from a streaming replica, never behind the handle's own
writes (sessiondb/store/postgres/replicas.py): a real replica of the suite's kind, started
from a base backup of a server of its own, whose replay the tests pause and resume."""

from __future__ import annotations

import time

import psycopg
import pytest

import pgserver
import sessiondb


@pytest.fixture(scope="module")
def formation():
    """(primary, replica): a server of this module's own and a hot standby following it."""
    try:
        primary = pgserver.start_server()
    except pgserver.ServerUnavailable as exc:
        pytest.skip(f"no PostgreSQL server here: {exc}")
    try:
        replica = pgserver.start_replica(primary)
    except BaseException:
        primary.destroy()
        raise
    yield primary, replica
    replica.destroy()
    primary.destroy()


def _sql(server: pgserver.Server, statement: str, *args):
    with psycopg.connect(server.url(), autocommit=True) as conn:
        cursor = conn.execute(statement, args)
        return cursor.fetchone() if cursor.description else None


def _caught_up(primary: pgserver.Server, replica: pgserver.Server) -> None:
    """Wait until the replica has replayed everything the primary has written so far."""
    position = _sql(primary, "SELECT pg_current_wal_insert_lsn()::text")[0]
    deadline = time.monotonic() + 60  # a bound on a hang, not a timing claim
    while not _sql(replica, "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", position)[0]:
        if time.monotonic() > deadline:
            pytest.fail("the replica did not catch up")
        time.sleep(0.01)


@pytest.fixture
def stores(formation, request):
    """(writer, reader): two handles on one schema, both with the replica; the schema on the replica."""
    primary, replica = formation
    schema = f"replicas_{request.node.name.split('[')[0][-40:]}".lower()
    options = {"schema": schema, "replicas": [replica.url()]}
    writer = sessiondb.open_store(primary.url(), **options)
    reader = sessiondb.open_store(primary.url(), **options)
    _caught_up(primary, replica)
    yield writer, reader
    _sql(replica, "SELECT pg_wal_replay_resume()")
    writer.close()
    reader.close()


def test_a_handle_reads_its_own_writes_while_the_replica_is_behind(formation, stores):
    primary, replica = formation
    writer, reader = stores
    _sql(replica, "SELECT pg_wal_replay_pause()")
    session = writer.create_session("telegram")
    writer.append(session.id, [{"uid": "z1", "role": "user", "content": "The zeppelin lands at noon."}])
    # The replica has not replayed the append: the writer's reads go to the primary.
    assert [h.uid for h in writer.search("zeppelin")] == ["z1"]
    assert [h.uid for h in writer.recall("When does the zeppelin land?")] == ["z1"]
    assert session.id in [s.id for s in writer.list_sessions().items]
    # A handle that wrote nothing reads from the replica, which does not hold it yet.
    assert reader.search("zeppelin") == [] and reader.recall("zeppelin") == []
    assert session.id not in [s.id for s in reader.list_sessions().items]
    _sql(replica, "SELECT pg_wal_replay_resume()")
    _caught_up(primary, replica)
    assert [h.uid for h in reader.search("zeppelin")] == ["z1"]


def test_a_replica_that_has_replayed_the_writes_answers_them(formation, stores):
    primary, replica = formation
    writer, _ = stores
    session = writer.create_session("telegram")
    writer.append(session.id, [{"uid": "k1", "role": "user", "content": "A kayak for the lake."}])
    _caught_up(primary, replica)
    assert [h.uid for h in writer.search("kayak")] == ["k1"]  # the handle's position, which the replica has
    _sql(replica, "SELECT pg_wal_replay_pause()")  # from now on only what the replica holds answers
    _sql(primary, f"DELETE FROM {writer.backend.schema}.messages WHERE uid = 'k1'")  # gone from the primary alone
    assert [h.uid for h in writer.search("kayak")] == ["k1"]  # read from the replica
    assert writer.backend.read(lambda rows: rows.select("messages", {"uid": "k1"})) == []  # the primary's


def test_a_replica_that_is_down_leaves_the_reads_to_the_primary(formation, stores):
    primary, replica = formation
    writer, reader = stores
    session = writer.create_session("telegram")
    writer.append(session.id, [{"uid": "b1", "role": "user", "content": "The balloon is red."}])
    replica.stop()
    try:
        assert [h.uid for h in writer.search("balloon")] == ["b1"]
        assert [h.uid for h in reader.search("balloon")] == ["b1"]
    finally:
        replica.start()
        _caught_up(primary, replica)


def test_an_operator_sees_which_server_answered(formation, stores):
    metrics = pytest.importorskip("opentelemetry.sdk.metrics")
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from sessiondb import telemetry

    primary, replica = formation
    writer, reader = stores
    collected = InMemoryMetricReader()
    telemetry.instrument(meter_provider=metrics.MeterProvider(metric_readers=[collected]))
    try:
        _sql(replica, "SELECT pg_wal_replay_pause()")
        writer.append(writer.create_session("cli").id, [{"role": "user", "content": "owl"}])
        writer.search("owl")  # the replica is behind the writer: the primary answers
        reader.search("owl")  # the reader wrote nothing: the replica answers
        data = collected.get_metrics_data()
        served = {point.attributes["sessiondb.served_by"]: point.value
                  for resource in data.resource_metrics for scope in resource.scope_metrics
                  for metric in scope.metrics if metric.name == "sessiondb.replica_reads"
                  for point in metric.data.data_points}
        assert served == {"primary": 1, "replica": 1}
    finally:
        telemetry.instrument()
