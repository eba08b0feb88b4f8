"""Maintenance: the routes of store.optimize, vacuum, prune and backup, mirroring
`sessiondb sessions optimize | vacuum | prune` and `sessiondb backup`.

The rewrites (optimize, vacuum) are refused while another process holds the store, exactly as the CLI
refuses them (S-19, S-43): the store raises StoreHeld, which is 409 with the holders in
`detail.holders`; `force` overrides with a warning in the report, and a dry run is never
refused. A backup is written into the profile's own `backups/` folder under a plain file
name: the service never writes where a request names a path.
"""

from __future__ import annotations

import time

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ..errors import InvalidInput
from ..home import ensure_private_dir
from ..model import MaintenanceReport
from ..inputs import check_label
from .sessions import ProfileQuery, store_for, stores_of

router = APIRouter(tags=["maintenance"])
DAY = 86400.0
ForceQuery = Query(False, description="Run even while other processes hold the store (the report warns).")
DryRunQuery = Query(False, description="Preview only; never refused.")


class PruneRequest(BaseModel):
    """What `sessions prune` takes: at least one of older_than_days and never_active."""

    model_config = ConfigDict(extra="forbid")
    older_than_days: float | None = Field(None, ge=0, allow_inf_nan=False,
                                          description="Remove sessions inactive for more than this many days.")
    never_active: StrictBool = Field(False, description="Remove sessions opened by a key and never used (30 days).")
    include_pinned: StrictBool = False
    include_archived: StrictBool = False
    force: StrictBool = False
    dry_run: StrictBool = False


class BackupRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(None, min_length=1, max_length=200,
                             description="A file name in the profile's backups/ folder (default: timestamped).")


def report(result: MaintenanceReport) -> dict:
    return dict(result.__dict__)


@router.post("/optimize")
async def optimize(request: Request, profile: str | None = ProfileQuery, force: bool = ForceQuery,
                   dry_run: bool = DryRunQuery) -> dict:
    """Merge the search index, refresh statistics, checkpoint (store.optimize); 409 while held."""
    store = await store_for(request, profile)
    return report(await store.optimize(force=force, dry_run=dry_run))


@router.post("/vacuum")
async def vacuum(request: Request, profile: str | None = ProfileQuery, force: bool = ForceQuery,
                 dry_run: bool = DryRunQuery) -> dict:
    """Rewrite the store compactly (store.vacuum); 409 while held."""
    store = await store_for(request, profile)
    return report(await store.vacuum(force=force, dry_run=dry_run))


@router.post("/prune")
async def prune(request: Request, body: PruneRequest, profile: str | None = ProfileQuery) -> dict:
    """Delete old or never-used sessions with their messages (store.prune), beside live writers."""
    store = await store_for(request, profile)
    older = None if body.older_than_days is None else body.older_than_days * DAY
    return report(await store.prune(older_than=older, never_active=body.never_active,
                                    include_pinned=body.include_pinned, include_archived=body.include_archived,
                                    force=body.force, dry_run=body.dry_run))


@router.post("/backup", status_code=201)
async def backup(request: Request, body: BackupRequest | None = None, profile: str | None = ProfileQuery) -> dict:
    """A consistent copy of the store while writers run (store.backup), in the profile's backups/ folder."""
    db = stores_of(request).path(profile)
    name = (body.name if body else None) or time.strftime(f"{db.name}.backup-%Y%m%dT%H%M%SZ", time.gmtime())
    # A plain, visible file name the file system takes, never one a forensic set uses.
    check_label(name, "the backup name")
    if any(c in name for c in "/\\") or name.startswith(".") or name.startswith(f"{db.name}.forensic-") \
            or len(name.encode("utf-8")) > 200:
        raise InvalidInput(f"the backup name {name!r} must be a plain file name (no folders, not hidden, not "
                           "a forensic set's)")
    folder = db.parent / "backups"
    ensure_private_dir(folder)
    store = await store_for(request, profile)
    size = await store.backup(folder / name)
    return {"store": store.location, "backup": str(folder / name), "bytes": size}
