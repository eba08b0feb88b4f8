"""Errors as JSON: `{code, message, detail}`, rendered from the guidance table.

Statuses: 404 not found, 409 conflicts and refusals, 422 bad input (FastAPI's own
validation errors are reshaped into the same JSON), 503 busy or damaged stores (507 for
a full disk, as the guidance table says). `code` is the cause's stable name when the
error has one (`locked`, `corrupt`...), else the error's kind (`not_found`,
`invalid_input`, `message_conflict`...).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import Cause, CheckpointRefused, RealHomeRefused, SessionDBError, SessionTooLarge, StoreClosed, StoreHeld
from ..guidance import error_code, for_error
from .responses import JSONResponse

log = logging.getLogger("sessiondb.api")

# Refusals the guidance table files under "other input" that the service answers differently.
_STATUS_OVERRIDES: tuple[tuple[type, int], ...] = (
    (StoreHeld, 409), (RealHomeRefused, 409), (SessionTooLarge, 422), (StoreClosed, 503),
)
_HTTP_CODES = {401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
               409: "conflict", 413: "too_large", 422: "invalid_input"}


def error_body(code: str, message: str, detail: Any = "") -> dict[str, Any]:
    return {"code": code, "message": message, "detail": detail}


def render(exc: SessionDBError, request: Request) -> JSONResponse:
    """The guidance for `exc`, about the store of the request's profile."""
    stores = request.app.state.stores
    profile = request.query_params.get("profile") or None
    try:
        db_path = stores.path(profile)
    except SessionDBError:
        db_path = stores.home / "state.db"
    advice = for_error(exc, db_path=Path(db_path), profile=profile, home=stores.home)
    status = advice.http_status
    for kind, override in _STATUS_OVERRIDES:
        if isinstance(exc, kind):
            status = override
    if advice.cause is Cause.UNKNOWN and status == 400:
        status = 409  # every other refusal of ours is a refusal, not malformed syntax
    code = error_code(exc, advice.cause)
    detail: Any = advice.detail
    if isinstance(exc, StoreHeld):
        detail = {"holders": [str(h) for h in exc.holders]}
    elif isinstance(exc, CheckpointRefused) and exc.report is not None:
        detail = exc.report.to_dict()  # a refused restore: every file and why
    return JSONResponse(error_body(code, advice.message, detail), status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(SessionDBError)
    async def _sessiondb_error(request: Request, exc: SessionDBError) -> JSONResponse:
        return render(exc, request)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for error in exc.errors():
            where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("body", "query", "path"))
            problems.append({"field": where, "problem": error.get("msg", "invalid")})
        first = problems[0] if problems else {"field": "", "problem": "invalid request"}
        message = f"{first['field']}: {first['problem']}" if first["field"] else first["problem"]
        return JSONResponse(error_body("invalid_input", message, problems), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status = 422 if exc.status_code == 400 else exc.status_code  # an unreadable body is bad input
        code = _HTTP_CODES.get(status, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return JSONResponse(error_body(code, message, ""), status_code=status,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error serving %s %s", request.method, request.url.path)
        stores = request.app.state.stores
        advice = for_error(exc, db_path=stores.home / "state.db", profile=None, home=stores.home)
        return JSONResponse(error_body(advice.cause.value, advice.message, advice.detail),
                            status_code=advice.http_status)
