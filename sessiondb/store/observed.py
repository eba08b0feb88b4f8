"""The gauges an open store handle reports to telemetry (sessiondb/telemetry.py).

Read when a metric reader collects, never on a call's path: the spool's depth, which
every store has; the search index's lag behind the messages, from a backend whose index
follows its writes (`index_lag`: the embedded store's; on a server the words are written
with the message); the use of the handle's connection pool, from a backend that has one
(`pool_use`).
"""

from __future__ import annotations

from typing import Any

from . import spool

_INDEX = {"sessiondb.index.lag.messages": 0, "sessiondb.index.lag.duration": 1}
_POOL = {"sessiondb.pool.connections.used": "used", "sessiondb.pool.connections.idle": "idle",
         "sessiondb.pool.requests.waiting": "waiting"}


def reading(store: Any, name: str) -> float | None:
    """The value of gauge `name` (telemetry.GAUGES) for `store`, None where it has none."""
    backend = store.backend
    if name == "sessiondb.spool.depth":
        return len(spool.pending(backend.spool_anchor))
    if name in _INDEX and hasattr(backend, "index_lag"):
        return backend.index_lag()[_INDEX[name]]
    if name in _POOL and hasattr(backend, "pool_use"):
        return backend.pool_use()[_POOL[name]]
    return None
