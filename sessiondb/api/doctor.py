"""The doctor: a read-only report of a profile's store, the in-place repair, and the way back
for what retired-WAL captures and the spool hold (store/captured.py).

The report is the store's Doctor (sessiondb.open_doctor: a private read-only connection,
never the service's own handles). A repair refuses while another process holds the store (409, the
holders listed, like the CLI); the service first closes its own handle on that profile so
it is not the holder, and reopens it on the next request.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Query, Request

from ..errors import StoreHeld
from ..store.captured import restore_captured
from ..store.optional import Doctor
from ..store.locations import open_doctor
from .sessions import ProfileQuery, stores_of
from .stores import Stores

router = APIRouter(tags=["doctor"])


def _doctor(stores: Stores, profile: str | None) -> Doctor:
    stores.path(profile)  # NotFound for a profile the home does not have
    return open_doctor(**stores.where(stores.name(profile)))


@router.get("/doctor")
async def doctor(request: Request, profile: str | None = ProfileQuery,
                 deep: bool = Query(False, description="Run the full integrity check, however long.")) -> dict:
    """The doctor's report on the profile's store; never writes."""
    report = await asyncio.to_thread(_doctor(stores_of(request), profile).examine, deep=deep)
    return report.to_dict()


@router.post("/doctor/repair")
@router.post("/doctor/fix", deprecated=True)  # the previous release's path, until the next
async def repair(request: Request, profile: str | None = ProfileQuery) -> dict:
    """Repair what can be repaired in place (doctor --repair); 409 while another process holds the store."""
    stores = stores_of(request)
    doctor = _doctor(stores, profile)
    held_by = await asyncio.to_thread(doctor.holders)
    if held_by:  # as docs/cli.md says of --repair: never while another process holds the store
        raise StoreHeld(f"repair refused: {doctor.location} is held by {', '.join(map(str, held_by))}; quit "
                        "those processes and run the repair again", held_by)
    async with stores.released(stores.name(profile)):
        report = await asyncio.to_thread(doctor.repair)
    return report.to_dict()


@router.post("/doctor/restore-captured")
async def restore(request: Request, profile: str | None = ProfileQuery,
                  other_generations: bool = Query(False, description="Also bring back what an earlier generation "
                                                  "of the store (a file since replaced) wrote.")) -> dict:
    """Bring back what retired-WAL captures and the spool hold (restore-captured); idempotent by uid."""
    stores = stores_of(request)
    stores.path(profile)  # NotFound for a profile the home does not have
    name = stores.name(profile)
    async with stores.released(name):  # the service's own handle may be one a replaced file refused
        report = await asyncio.to_thread(restore_captured, **stores.where(name), other_generations=other_generations)
    return report.to_dict()
