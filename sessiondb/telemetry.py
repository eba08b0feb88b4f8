"""What an operator sees: OpenTelemetry spans and metrics of the stores a process opens.

Optional: the `otel` extra brings the OpenTelemetry API (and the SDK and the Prometheus
reader `sessiondb serve` uses). Without `opentelemetry-api` every hook here returns at
once and nothing is imported. With it, sessiondb asks the process's global tracer and
meter providers, as a library should: the application chooses the SDK, its exporters and
readers (`instrument()` points sessiondb at providers of its own instead). The API is
imported on the first traced call, not with sessiondb.

What is traced (docs/telemetry.md lists every name): the public calls of a store handle
named in OPERATIONS, from the neutral layer (store/checked.py) whatever the backend, and
the doctor's examine and repair (store/locations.py). Spans follow the GenAI memory
semantic conventions (development status): `gen_ai.operation.name` (`update_memory` for
an append, `search_memory` for search and recall, `delete_memory`), `gen_ai.provider.name`
`sessiondb`, `gen_ai.memory.store.id` (the profile), `gen_ai.memory.record.count`;
`db.system.name` names the backend, `error.type` a failure's cause. What a backend alone
sees is recorded where it happens: the size of each group commit, a unit of work retried,
the server answering from another address (a failover). The gauges (spool depth, search
index lag, pool use) are read when a reader collects, from the handles still open
(`watch`).

No attribute ever holds message content, a query, a title, a session id or key, or a
user's identity: only the names of operations, backends, causes and profiles.
"""

from __future__ import annotations

import functools
import threading
import time
import weakref
from typing import Any, Callable, Iterable, Mapping

SCOPE = "sessiondb"
PROVIDER = "sessiondb"

#: Traced public calls -> their gen_ai.operation.name (None where the conventions name no
#: memory operation: the span is then `sessiondb NAME`).
OPERATIONS: Mapping[str, str | None] = {
    "append": "update_memory", "flush": "update_memory", "import_records": "update_memory",
    "search": "search_memory", "recall": "search_memory",
    "delete_session": "delete_memory",
    "begin_compaction": None, "commit_compaction": None, "abort_compaction": None,
    "optimize": None, "vacuum": None, "prune": None, "backup": None, "verify": None,
    "doctor.examine": None, "doctor.repair": None,
}

#: The gauges a watched handle may report (store/observed.py reads them) -> (unit, description).
GAUGES: Mapping[str, tuple[str, str]] = {
    "sessiondb.spool.depth": ("{batch}", "Batches the store refused, kept in this host's spool to be written later"),
    "sessiondb.index.lag.messages": ("{message}", "Messages stored but not yet in the search index"),
    "sessiondb.index.lag.duration": ("s", "How long the search index has been behind the store"),
    "sessiondb.pool.connections.used": ("{connection}", "Connections of the handle's pool serving a call"),
    "sessiondb.pool.connections.idle": ("{connection}", "Open connections of the handle's pool waiting for a call"),
    "sessiondb.pool.requests.waiting": ("{request}", "Calls waiting for a connection of the handle's pool"),
}

_DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_GROUP_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

_lock = threading.Lock()
_state: dict[str, Any] = {"instruments": None, "providers": (None, None), "checked": False}
_watched: "weakref.WeakKeyDictionary[Any, Callable[[Any, str], float | None]]" = weakref.WeakKeyDictionary()


class _Instruments:
    """The tracer and the instruments, made once per pair of providers."""

    def __init__(self, trace: Any, metrics: Any, tracer_provider: Any, meter_provider: Any) -> None:
        self.trace = trace
        self.metrics = metrics
        self.own = tracer_provider is not None or meter_provider is not None
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = (meter_provider or metrics.get_meter_provider()).get_meter(SCOPE)
        self.duration = meter.create_histogram(
            "sessiondb.operation.duration", unit="s", description="How long a store call took, retries included",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS)
        self.group = meter.create_histogram(
            "sessiondb.commit.group_size", unit="{unit_of_work}",
            description="Units of work (appends, on a server) committed together in one transaction",
            explicit_bucket_boundaries_advisory=_GROUP_BUCKETS)
        self.retries = meter.create_counter(
            "sessiondb.retries", unit="{retry}", description="Units of work run again after a failure worth retrying")
        self.failovers = meter.create_counter(
            "sessiondb.failovers", unit="{failover}",
            description="Times a store's server answered from another address than before (a failover)")
        self.reads = meter.create_counter(
            "sessiondb.replica_reads", unit="{read}",
            description="Searches, recalls and listings of a store with replicas, by the server that answered")
        for name, (unit, description) in GAUGES.items():
            meter.create_observable_gauge(name, callbacks=[functools.partial(_observe, metrics, name)],
                                          unit=unit, description=description)


    def silent(self) -> bool:
        """Whether the global providers are still the API's placeholders (no SDK set yet), so
        a span or a measurement would be dropped: a call then skips them (some 10 µs)."""
        return not self.own and isinstance(self.trace.get_tracer_provider(), self.trace.ProxyTracerProvider) \
            and type(self.metrics.get_meter_provider()).__name__ == "_ProxyMeterProvider"


#: Whether calls record now: the API is installed and a provider set (an SDK's, or the
#: ones `instrument` names). Read where a call is made, so a store that records nothing
#: pays one attribute read for it; looked at again when a handle opens and by `instrument`.
recording = False


def refresh() -> None:
    """Look again at whether calls record (a provider may have been set since)."""
    global recording
    made = _instruments()
    recording = made is not None and not made.silent()


def _instruments() -> _Instruments | None:
    """The instruments, or None without the OpenTelemetry API (then nothing is recorded)."""
    made = _state["instruments"]
    if made is not None or _state["checked"]:
        return made
    with _lock:
        if not _state["checked"]:
            try:
                from opentelemetry import metrics, trace
            except ImportError:
                _state["instruments"] = None
            else:
                _state["instruments"] = _Instruments(trace, metrics, *_state["providers"])
            _state["checked"] = True
    return _state["instruments"]


def instrument(*, tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Record to these providers from now on (None: the process's global ones)."""
    with _lock:
        _state["providers"] = (tracer_provider, meter_provider)
        _state["instruments"], _state["checked"] = None, False
    refresh()


def available() -> bool:
    """Whether the OpenTelemetry API is installed (else sessiondb records nothing)."""
    return _instruments() is not None


# --- spans and durations of public calls ---------------------------------------------------


def traced(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` of a doctor, traced while calls record (a store handle's calls are traced
    by its own wrapper, store/checked.py, with `traced_call`)."""
    @functools.wraps(method)
    def tracing(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not recording:
            return method(self, *args, **kwargs)
        return traced_call(name, self, method, args, kwargs)
    return tracing


def traced_call(name: str, handle: Any, method: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """`method(handle, *args, **kwargs)` in a span, its duration measured (OPERATIONS names it)."""
    made = _instruments()
    if made is None:
        return method(handle, *args, **kwargs)
    operation = OPERATIONS[name]
    system = system_of(handle)
    store = _store_id(handle)
    attributes: dict[str, Any] = {"gen_ai.provider.name": PROVIDER, "db.system.name": system,
                                  "gen_ai.memory.store.id": store, "sessiondb.operation": name}
    if operation is not None:
        attributes["gen_ai.operation.name"] = operation
    span_name = f"{operation} {store}" if operation is not None else f"sessiondb {name}"
    measured = {"sessiondb.operation": name, "db.system.name": system}
    started = time.perf_counter()
    with made.tracer.start_as_current_span(span_name, kind=made.trace.SpanKind.CLIENT, attributes=attributes,
                                           record_exception=False, set_status_on_exception=False) as span:
        try:
            result = method(handle, *args, **kwargs)
        except BaseException as exc:
            error = error_type(exc)
            span.set_attribute("error.type", error)
            span.set_status(made.trace.Status(made.trace.StatusCode.ERROR, error))
            made.duration.record(time.perf_counter() - started, {**measured, "error.type": error})
            raise
        if isinstance(result, list):
            span.set_attribute("gen_ai.memory.record.count", len(result))
        made.duration.record(time.perf_counter() - started, measured)
        return result


def doctor(examiner: Any) -> Any:
    """`examiner` (a store's Doctor) with its examine and repair traced."""
    refresh()
    for name in ("examine", "repair"):
        setattr(examiner, name, functools.partial(traced(f"doctor.{name}", getattr(type(examiner), name)), examiner))
    return examiner


def error_type(exc: BaseException) -> str:
    """A failure as a low-cardinality name: its cause when it has one, else its class."""
    cause = getattr(exc, "cause", None)
    value = getattr(cause, "value", None)
    return value if isinstance(value, str) and value != "unknown" else type(exc).__name__


def system_of(handle: Any) -> str:
    """`db.system.name` of the handle's backend: `sqlite`, `postgresql`, or the backend's own name."""
    backend = getattr(handle, "backend", handle)
    module = type(backend).__module__.split(".")
    name = module[2] if module[:2] == ["sessiondb", "store"] and len(module) > 2 else module[0]
    return "postgresql" if name == "postgres" else name


def _store_id(handle: Any) -> str:
    """The profile a handle serves (`main` by default): a name the operator chose."""
    profile = getattr(handle, "profile", None)
    return profile if isinstance(profile, str) else "main"


# --- what only a backend sees --------------------------------------------------------------


def committed_together(count: int, system: str) -> None:
    """A group commit of `count` units of work in one transaction."""
    made = _instruments()
    if made is not None:
        made.group.record(count, {"db.system.name": system})


def retried(system: str, exc: BaseException) -> None:
    """A unit of work is run again after `exc`."""
    made = _instruments()
    if made is not None:
        made.retries.add(1, {"db.system.name": system, "error.type": error_type(exc)})


def failed_over(system: str) -> None:
    """A store's server now answers from another address than it did."""
    made = _instruments()
    if made is not None:
        made.failovers.add(1, {"db.system.name": system})


def read_served(system: str, served_by: str) -> None:
    """A read a replica could take was answered by `served_by` ("replica" or "primary")."""
    made = _instruments()
    if made is not None:
        made.reads.add(1, {"db.system.name": system, "sessiondb.served_by": served_by})


# --- gauges of open handles ----------------------------------------------------------------


def watch(handle: Any, reading: Callable[[Any, str], float | None]) -> None:
    """Report `reading(handle, name)` for each of GAUGES while `handle` is open (None: the
    handle has no such gauge)."""
    refresh()
    _watched[handle] = reading


def forget(handle: Any) -> None:
    _watched.pop(handle, None)


def _observe(metrics: Any, name: str, options: Any) -> Iterable[Any]:
    """One gauge's values, summed over the open handles of each backend and profile."""
    totals: dict[tuple[str, str], float] = {}
    for handle, reading in list(_watched.items()):
        try:
            value = reading(handle, name)
        except Exception:  # noqa: BLE001 - a handle closing meanwhile, a server away: no reading this time
            continue
        if value is not None:
            key = (system_of(handle), _store_id(handle))
            totals[key] = totals.get(key, 0) + value
    return [metrics.Observation(value, {"db.system.name": system, "gen_ai.memory.store.id": store})
            for (system, store), value in totals.items()]
