"""Turns and checkpoints of a session: the routes of store.turns and of the checkpoints'
list, diff and restore (S-50..S-53). A refusal (the tools run in a container, a restore
that would overwrite a person's edit) is a 409 in the library's own words; a refused
restore's `detail` lists every file."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request

from ..guidance import explain_turn
from ..turns import Checkpoints
from .sessions import ProfileQuery, row, store_for

router = APIRouter(tags=["turns"])


@router.get("/sessions/{session_id}/turns")
async def list_turns(request: Request, session_id: str, profile: str | None = ProfileQuery,
                     limit: int = Query(100, ge=1, le=1000)) -> dict:
    """The session's newest turns, oldest first, each with the sentence that says why it ended."""
    store = await store_for(request, profile)
    found = await store.turns(session_id, limit=limit)
    return {"items": [{**row(t), "explanation": explain_turn(t.reason) if t.reason else None} for t in found]}


async def _checkpoints(request: Request, profile: str | None) -> Checkpoints:
    return Checkpoints((await store_for(request, profile)).sync)


@router.get("/sessions/{session_id}/checkpoints")
async def list_checkpoints(request: Request, session_id: str, profile: str | None = ProfileQuery) -> dict:
    """The session's checkpoints, and whether diff and restore are offered (and why not)."""
    cps = await _checkpoints(request, profile)
    env = await asyncio.to_thread(cps.environment, session_id)
    found = await asyncio.to_thread(cps.list, session_id)
    return {"environment": {"backend": env.backend, "refusal": env.refusal}, "items": [c.to_dict() for c in found]}


@router.get("/sessions/{session_id}/checkpoints/{checkpoint_id}/diff")
async def diff(request: Request, session_id: str, checkpoint_id: str, profile: str | None = ProfileQuery) -> dict:
    """What changed in the tree since the checkpoint."""
    cps = await _checkpoints(request, profile)
    return (await asyncio.to_thread(cps.diff, session_id, checkpoint_id)).to_dict()


@router.post("/sessions/{session_id}/checkpoints/{checkpoint_id}/restore")
async def restore(request: Request, session_id: str, checkpoint_id: str, profile: str | None = ProfileQuery,
                  force: bool = False) -> dict:
    """Put the tree back as the checkpoint has it (the state before is checkpointed first)."""
    cps = await _checkpoints(request, profile)
    return (await asyncio.to_thread(cps.restore, session_id, checkpoint_id, force=force)).to_dict()
