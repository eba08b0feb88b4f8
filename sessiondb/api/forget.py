"""Erasure: the route of store.forget, mirroring `sessiondb forget` (S-55).

The body names whose conversations go (at least one selector: 422 otherwise, the
library's InvalidInput); the answer is the receipt, the same object `sessiondb forget
--json` prints, `clean` false while a copy remains.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from .sessions import ProfileQuery, store_for

router = APIRouter(tags=["erasure"])


class ForgetRequest(BaseModel):
    """What `forget` takes: every selector given must match a conversation for it to go."""

    model_config = ConfigDict(extra="forbid")
    user_id: str | None = Field(None, max_length=200, description="The conversations of this user.")
    session_id: str | None = Field(None, max_length=200,
                                   description="The conversation this session belongs to, with its branches.")
    source: str | None = Field(None, max_length=200, description="The conversations from this source.")
    before: float | None = Field(None, allow_inf_nan=False, description=(
        "Only conversations whose every session was last active before this time (seconds since the epoch)."))
    dry_run: StrictBool = Field(False, description="Say what would be removed; change nothing.")


@router.post("/forget")
async def forget(request: Request, body: ForgetRequest, profile: str | None = ProfileQuery) -> dict:
    """Erase conversations from every copy sessiondb made, and prove it by a scan of its files (store.forget)."""
    store = await store_for(request, profile)
    return (await store.forget(**body.model_dump())).to_dict()
