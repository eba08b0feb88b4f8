"""The FastAPI application: stores per profile, auth, error JSON, routes, the dashboard.

Every store call is awaited on the AsyncStore's own thread pool (doctor and export run on
worker threads too), so a slow request never holds the event loop and never blocks others.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from importlib import metadata, resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles

from ..home import resolve_home
from . import doctor, errors, forget, policy, search, sessions, turns, usage
from .auth import TokenAuth
from .guard import DEFAULT_MAX_BODY, Guard, allowed_hosts
from .maintenance import router as maintenance_routes
from .metrics import prometheus_registry
from .metrics import router as metrics_routes
from .responses import JSONResponse
from .stores import Stores

try:
    VERSION = metadata.version("sessiondb")
except metadata.PackageNotFoundError:  # running from a source tree without metadata
    VERSION = "0.0.0"

STATIC = Path(str(resources.files("sessiondb.api") / "static"))


def stores_of(request: Request) -> Stores:
    return request.app.state.stores


def create_app(home: str | Path | None = None, *, token: str | None = None, host: str = "127.0.0.1",
               port: int = 8765, max_body: int = DEFAULT_MAX_BODY, url: str | None = None,
               metrics: bool = False) -> FastAPI:
    """The service for every profile under `home` (default: $SESSIONDB_HOME or ~/.sessiondb),
    or with `url` every profile on that server, answering only requests addressed to
    `host`:`port` (and loopback names on that port).

    With `token`, every API request must send `Authorization: Bearer <token>`.
    Request bodies over `max_body` bytes are refused (413). With `metrics`, sessiondb's
    metrics in this process go to the service's own Prometheus registry, served at
    /metrics (api/metrics.py): for a process that is the service, as `sessiondb serve` is.
    """
    stores = Stores(resolve_home(home), url)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await stores.close()

    # No /docs or /redoc: their pages load scripts from a CDN; /openapi.json stays.
    app = FastAPI(title="sessiondb", version=VERSION, lifespan=lifespan, docs_url=None, redoc_url=None,
                  default_response_class=JSONResponse,
                  description="The durable memory of AI agents: sessions, messages, search, doctor.")
    app.state.stores = stores
    app.state.metrics = prometheus_registry() if metrics else None
    errors.install(app)

    @app.get("/api/health", tags=["service"])
    async def health(request: Request) -> dict:
        """The service is up: its version, home (or server) and profiles."""
        return {"status": "ok", "version": VERSION, "home": stores.shown,
                "profiles": await asyncio.to_thread(stores.profiles)}

    @app.get("/api/profiles", tags=["service"])
    async def profiles() -> dict:
        """Every profile under the home (or on the server): `main` (the home's own store),
        then the named ones."""
        names = await asyncio.to_thread(stores.profiles)
        return {"items": [{"name": n, "path": str(stores.path(n) if stores.url is None else stores.shown)}
                          for n in names]}

    app.include_router(sessions.router, prefix="/api")
    app.include_router(search.router, prefix="/api")
    app.include_router(doctor.router, prefix="/api")
    app.include_router(usage.router, prefix="/api")
    app.include_router(turns.router, prefix="/api")
    app.include_router(maintenance_routes, prefix="/api")
    app.include_router(forget.router, prefix="/api")
    app.include_router(policy.router, prefix="/api")
    app.include_router(metrics_routes)

    @app.get("/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        return Response(status_code=204)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    if token:
        app.add_middleware(TokenAuth, token=token)
    app.add_middleware(Guard, hosts=allowed_hosts(host, port), max_body=max_body)  # outermost: sees every request
    return app
