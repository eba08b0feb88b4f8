"""Search: the route of store.search, paged, and the route of store.recall. Snippets carry matches in <mark>...</mark> and
are otherwise unescaped text: a page must escape them before inserting them as HTML. A hit
in an untitled session carries `session_first_words` (titles.first_words) to be called by.

A page is cut from the best `SEARCH_WINDOW` hits (the store's own limit), so `total` is
the true number of hits up to that window and `total_exact` says whether it was reached.
With `spread`, hits are ordered by their rank within their session first (every
session's best hit, then every session's second...), so one long session that matches
everywhere does not bury the others.
"""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter, Query, Request

from ..model import SearchHit
from .sessions import ProfileQuery, store_for, with_first_words

router = APIRouter(tags=["search"])

SEARCH_WINDOW = 1000  # the most hits store.search returns


@router.get("/search")
async def search(
    request: Request,
    q: str = Query(..., max_length=1000, description="words, \"phrases\", OR, -word, prefix*"),
    profile: str | None = ProfileQuery,
    source: str | None = Query(None, max_length=200),
    user_id: str | None = Query(None, max_length=200, description="Only this person's sessions."),
    session_id: str | None = Query(None, max_length=200),
    conversation: bool = Query(False, description="With session_id: every session of its conversation."),
    role: str | None = Query(None, max_length=200),
    since: float | None = Query(None, allow_inf_nan=False),
    until: float | None = Query(None, allow_inf_nan=False),
    include_tools: bool = False,
    include_reasoning: bool = Query(False, description="Match responses' reasoning too (words, not substrings)."),
    substring: bool = False,
    limit: int = Query(20, ge=1, le=SEARCH_WINDOW),
    offset: int = Query(0, ge=0, le=SEARCH_WINDOW, description="Skip this many hits (the next page)."),
    spread: bool = Query(False, description="Each session's best hit first, so one session does not bury the rest."),
) -> dict:
    """Messages matching `q`, best first (store.search); never fails on what a person types.

    `{items, total, total_exact, next_offset, sessions}`: `sessions` counts the hits per
    session id over the whole window, `next_offset` is null on the last page.
    """
    store = await store_for(request, profile)
    hits = await store.search(q, source=source, user_id=user_id, session_id=session_id, conversation=conversation,
                              role=role, since=since, until=until, include_tools=include_tools,
                              include_reasoning=include_reasoning, substring=substring, limit=SEARCH_WINDOW)
    if spread:
        hits = spread_by_session(hits)
    page = hits[offset:offset + limit]
    end = offset + len(page)
    return {"items": await with_first_words(store, [h.to_dict() for h in page], "session_"), "total": len(hits), "total_exact": len(hits) < SEARCH_WINDOW,
            "next_offset": end if end < len(hits) else None,
            "sessions": dict(Counter(h.session_id for h in hits))}


@router.get("/recall")
async def recall(
    request: Request,
    q: str = Query(..., max_length=20_000, description="a question in natural language"),
    profile: str | None = ProfileQuery,
    source: str | None = Query(None, max_length=200),
    user_id: str | None = Query(None, max_length=200, description="Only this person's sessions."),
    session_id: str | None = Query(None, max_length=200),
    conversation: bool = Query(False, description="With session_id: every session of its conversation."),
    role: str | None = Query(None, max_length=200),
    since: float | None = Query(None, allow_inf_nan=False),
    until: float | None = Query(None, allow_inf_nan=False),
    include_tools: bool = False,
    limit: int = Query(10, ge=1, le=SEARCH_WINDOW),
) -> dict:
    """The messages that best answer `q`, a question in natural language (store.recall), best first.

    `{items, note}`: `note` says in words how many were found, or that nothing was.
    """
    store = await store_for(request, profile)
    hits = await store.recall(q, source=source, user_id=user_id, session_id=session_id, conversation=conversation,
                              role=role, since=since, until=until, include_tools=include_tools, limit=limit)
    note = f"{len(hits)} message(s), best first." if hits else "Nothing stored matches this question."
    return {"items": await with_first_words(store, [h.to_dict() for h in hits], "session_"), "note": note}


def spread_by_session(hits: list[SearchHit]) -> list[SearchHit]:
    """Hits by (rank within their session, overall rank): a stable interleave."""
    seen: Counter[str] = Counter()
    ranked = []
    for overall, hit in enumerate(hits):
        ranked.append((seen[hit.session_id], overall, hit))
        seen[hit.session_id] += 1
    return [hit for _, _, hit in sorted(ranked, key=lambda r: (r[0], r[1]))]
