"""`GET /metrics`: the service's metrics for Prometheus, to the owner only.

`sessiondb serve` is an application, so it chooses where sessiondb's metrics go
(sessiondb/telemetry.py): a meter provider of its own whose reader is OpenTelemetry's
Prometheus reader, on a registry of its own, rendered in Prometheus' text format here.
Like every route but the dashboard's static files, it needs the service's token
(api/auth.py): a scrape sends it as `Authorization: Bearer TOKEN` (Prometheus'
`authorization: {credentials_file: ...}`). Without the `otel` extra the route answers 404
saying what to install.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response

from .. import telemetry
from .errors import error_body
from .responses import JSONResponse

router = APIRouter()


def prometheus_registry() -> Any | None:
    """A Prometheus registry fed by sessiondb's metrics from now on, or None without the
    `otel` extra (the OpenTelemetry SDK, its Prometheus reader and prometheus_client)."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from opentelemetry.sdk.metrics import MeterProvider
        from prometheus_client import CollectorRegistry
    except ImportError:
        return None
    registry = CollectorRegistry()
    telemetry.instrument(meter_provider=MeterProvider(metric_readers=[PrometheusMetricReader(registry=registry)]))
    return registry


@router.get("/metrics", include_in_schema=False)  # Prometheus text, not the JSON API
async def metrics(request: Request) -> Response:
    """sessiondb's metrics in Prometheus' text format (docs/telemetry.md names them)."""
    registry = request.app.state.metrics
    if registry is None:
        return JSONResponse(error_body(
            "not_found", "this service has no metrics: install the `otel` extra (pip install 'sessiondb[otel]') "
            "and start it again", ""), status_code=404)
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
