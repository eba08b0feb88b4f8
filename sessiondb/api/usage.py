"""Usage of a whole profile (sessiondb.usage.profile_usage): tokens and cost by model and
by day. A session's own usage is GET /api/sessions/{id}/usage (store.usage)."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request

from ..usage import profile_usage
from .sessions import ProfileQuery, store_for

router = APIRouter(tags=["usage"])


@router.get("/usage")
async def usage(request: Request, profile: str | None = ProfileQuery,
                since: float | None = Query(None, allow_inf_nan=False),
                until: float | None = Query(None, allow_inf_nan=False)) -> dict:
    """The profile's usage: `{profile, sessions, totals, models, days}` (days oldest first, UTC)."""
    store = await store_for(request, profile)
    # One read per session: on a worker thread with the synchronous store, not one hop each.
    report = await asyncio.to_thread(profile_usage, store.sync, since=since, until=until)
    return report.to_dict()
