"""Search: the route of store.search. Snippets carry matches in <mark>...</mark> and are
otherwise unescaped text: a page must escape them before inserting them as HTML."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request

from .sessions import ProfileQuery, store_for

router = APIRouter(tags=["search"])


@router.get("/search")
async def search(
    request: Request,
    q: str = Query(..., max_length=1000, description="words, \"phrases\", OR, -word, prefix*"),
    profile: str | None = ProfileQuery,
    source: str | None = Query(None, max_length=200),
    session_id: str | None = Query(None, max_length=200),
    role: str | None = Query(None, max_length=200),
    since: float | None = Query(None, allow_inf_nan=False),
    until: float | None = Query(None, allow_inf_nan=False),
    include_tools: bool = False,
    substring: bool = False,
    limit: int = Query(20, ge=1, le=1000),
) -> dict:
    """Messages matching `q`, best first (store.search); never fails on what a person types."""
    store = await store_for(request, profile)
    hits = await store.search(q, source=source, session_id=session_id, role=role, since=since, until=until,
                              include_tools=include_tools, substring=substring, limit=limit)
    return {"items": [h.to_dict() for h in hits]}
