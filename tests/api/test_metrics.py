"""`GET /metrics` of a real `sessiondb serve` process: sessiondb's metrics in Prometheus'
text format, to the token's holder only, never naming what was written or searched."""

from __future__ import annotations

import sys

import httpx
import pytest

from .conftest import start, stop

pytest.importorskip("opentelemetry.exporter.prometheus")

SECRET = "zeppelin-over-the-vault"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    running = start(tmp_path_factory.mktemp("metrics") / "home")
    yield running
    stop(running)


def test_metrics_answer_the_token_holder_only(served):
    assert httpx.get(served.url + "/metrics", timeout=30).status_code == 401
    assert httpx.get(served.url + "/metrics", headers={"Authorization": "Bearer wrong"}, timeout=30).status_code == 401


def test_metrics_count_the_served_calls_without_their_content(served):
    with served.client() as api:
        s = api.post("/api/sessions", json={"source": "cli"}).json()
        for n in range(3):
            assert api.post(f"/api/sessions/{s['id']}/append",
                            json={"messages": [{"role": "user", "content": f"{SECRET} {n}"}]}).status_code == 200
        assert api.get("/api/search", params={"q": "zeppelin"}).status_code == 200
        scraped = api.get("/metrics")
    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    text = scraped.text
    appends = [line for line in text.splitlines()
               if line.startswith("sessiondb_operation_duration_seconds_count") and 'sessiondb_operation="append"' in line]
    assert appends and appends[0].endswith(" 3.0")
    assert 'sessiondb_operation="search"' in text and "sessiondb_commit_group_size" in text
    assert 'sessiondb_spool_depth{db_system_name="sqlite",gen_ai_memory_store_id="main"' in text
    assert SECRET not in text and "zeppelin" not in text and s["id"] not in text


def test_without_the_otel_extra_metrics_say_what_to_install(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient

    from sessiondb.api import create_app

    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.prometheus", None)  # its import now fails
    app = create_app(tmp_path / "home", token="t0ken", metrics=True)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        assert client.get("/metrics").status_code == 401
        answer = client.get("/metrics", headers={"Authorization": "Bearer t0ken"})
    assert answer.status_code == 404 and "sessiondb[otel]" in answer.json()["message"]
