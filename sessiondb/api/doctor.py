"""The doctor: a read-only report of a profile's store, and the in-place repair.

The report is sessiondb.safety.doctor.examine (a private read-only connection, never the
service's own handles). A repair refuses while another process holds the store (409, the
holders listed, like the CLI); the service first closes its own handle on that profile so
it is not the holder, and reopens it on the next request.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request

from .. import open_store
from ..errors import StoreHeld
from ..guidance import command_for
from ..home import DEFAULT_PROFILE
from ..model import SpoolReport
from ..store.sqlite.safety import doctor as doctors
from ..store.sqlite.safety.holders import holders
from .sessions import ProfileQuery, stores_of

router = APIRouter(tags=["doctor"])


def _command(stores, name: str) -> str:
    return command_for(None if name == DEFAULT_PROFILE else name, stores.home)


def _replay(path) -> SpoolReport:
    """Replay the spool through the store opened normally (the repair calls it when healthy)."""
    with open_store(path) as store:
        return store.replay_spool()


@router.get("/doctor")
async def doctor(request: Request, profile: str | None = ProfileQuery,
                 deep: bool = Query(False, description="Run the full integrity check, however long.")) -> dict:
    """The doctor's report on the profile's store; never writes."""
    stores = stores_of(request)
    path = stores.path(profile)
    report = await asyncio.to_thread(doctors.examine, path, deep=deep,
                                     command=_command(stores, stores.name(profile)))
    return report.to_dict()


@router.post("/doctor/fix")
async def fix(request: Request, profile: str | None = ProfileQuery) -> dict:
    """Repair what can be repaired in place (doctor --fix); 409 while another process holds the store."""
    stores = stores_of(request)
    path = stores.path(profile)
    name = stores.name(profile)
    held_by = await asyncio.to_thread(holders, path)
    if held_by:  # as docs/cli.md says of --fix: never while another process holds the store
        raise StoreHeld(f"repair refused: {path} is held by {', '.join(map(str, held_by))}; quit those "
                        "processes and run the fix again", held_by)
    async with stores.released(name):
        report = await asyncio.to_thread(doctors.repair, path, command=_command(stores, name),
                                         replay=lambda: _replay(path))
    return report.to_dict()
