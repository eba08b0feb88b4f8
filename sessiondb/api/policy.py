"""Retention: the routes of store.policy, set_policy, clear_policy, hold, release_hold and
apply_policy, mirroring `sessiondb policy show | set | clear | hold | release | apply`.

Bodies refuse a field they do not know (422): a misspelled rule, ignored, would keep or
remove what was not asked. What the library refuses (rules that say nothing, keep_last 0,
a hold naming both a user and a session, rules that would remove every conversation they
cover) is its InvalidInput, 422 too. `apply` is a dry run unless its body says otherwise;
a report the rules refused is still the report (200, `refused` set), as the library
returns it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt

from .sessions import ProfileQuery, store_for

router = APIRouter(tags=["retention"])


def _period(what: str) -> Any:
    """A rule's period, in seconds (the library refuses one outside its range)."""
    return Field(None, allow_inf_nan=False, description=f"Seconds: {what}.")


class PolicyRequest(BaseModel):
    """What `policy set` takes: the rules of one source (none: of every other source)."""

    model_config = ConfigDict(extra="forbid")
    source: str | None = Field(None, max_length=200, description=(
        "The source these rules cover (none: every source without rules of its own)."))
    inactive_after: float | None = _period("a conversation last active longer ago than this goes")
    keep_last: StrictInt | None = Field(None, description="The newest N conversations stay, the older go.")
    compacted_after: float | None = _period("the text of compacted originals older than this is dropped")
    never_active_after: float | None = _period("a session opened by a key and never used, older than this, goes")
    force: StrictBool = Field(False, description="Set them even if they would remove every conversation they cover.")


class HoldRequest(BaseModel):
    """What `policy hold` takes: one user_id or one session_id, and why."""

    model_config = ConfigDict(extra="forbid")
    user_id: str | None = Field(None, max_length=200, description="Every conversation of this user.")
    session_id: str | None = Field(None, max_length=200, description="The conversation this session belongs to.")
    reason: str = Field(description="Why they are held (a case, a request).")


class ApplyRequest(BaseModel):
    """What `policy apply` takes: a dry run unless `dry_run` is false."""

    model_config = ConfigDict(extra="forbid")
    dry_run: StrictBool = Field(True, description="Say what would go; change nothing (the default).")
    force: StrictBool = Field(False, description="Apply even rules that would remove every conversation they cover.")


@router.get("/policy")
async def policy(request: Request, profile: str | None = ProfileQuery) -> dict:
    """The retention rules and legal holds (store.policy)."""
    store = await store_for(request, profile)
    return (await store.policy()).to_dict()


@router.put("/policy")
async def set_policy(request: Request, body: PolicyRequest, profile: str | None = ProfileQuery) -> dict:
    """Declare the retention rules of a source, replacing its earlier ones (store.set_policy)."""
    store = await store_for(request, profile)
    return (await store.set_policy(**body.model_dump())).to_dict()


@router.delete("/policy")
async def clear_policy(request: Request, profile: str | None = ProfileQuery,
                       source: str | None = Query(None, max_length=200,
                                                  description="The rules of this source (none: of every other).")
                       ) -> dict:
    """Remove the retention rules of a source (store.clear_policy): `{source, cleared}`."""
    store = await store_for(request, profile)
    return {"source": source, "cleared": await store.clear_policy(source=source)}


@router.post("/policy/holds", status_code=201)
async def hold(request: Request, body: HoldRequest, profile: str | None = ProfileQuery) -> dict:
    """Place a legal hold: no rule and no forget removes these conversations (store.hold)."""
    store = await store_for(request, profile)
    return (await store.hold(**body.model_dump())).to_dict()


@router.delete("/policy/holds")
async def release_hold(request: Request, profile: str | None = ProfileQuery,
                       user_id: str | None = Query(None, max_length=200),
                       session_id: str | None = Query(None, max_length=200)) -> dict:
    """Release a legal hold (store.release_hold): `{user_id, session_id, released}`."""
    store = await store_for(request, profile)
    released = await store.release_hold(user_id=user_id, session_id=session_id)
    return {"user_id": user_id, "session_id": session_id, "released": released}


@router.post("/policy/apply")
async def apply_policy(request: Request, body: ApplyRequest | None = None, profile: str | None = ProfileQuery) -> dict:
    """Apply the retention rules, a dry run unless `dry_run` is false (store.apply_policy)."""
    store = await store_for(request, profile)
    return (await store.apply_policy(**(body or ApplyRequest()).model_dump())).to_dict()
