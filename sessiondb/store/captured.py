"""The way back (S-49): every acknowledged message captured in a retired WAL, and every batch
refused into the spool, brought back into the store it belongs to, or into a named new one.

`restore_captured` (the CLI's `sessiondb restore-captured`) works on any store whose doctor
keeps captures (optional.Captures; the SQLite backend's, safety/captures.py):

1. The target opens first, without replaying its spool (so nothing refused later lands
   before what was acknowledged earlier). Opening the profile's own store also sets aside
   a WAL a replaced file left beside it (walowner.py), which becomes one more capture.
2. Each capture not brought back yet is salvaged into a scratch store (the live file is
   never read with plain I/O and never written by the reading), and its sessions are
   brought over: a session the target lacks is imported whole (rows, states, usage,
   turns); into a session it has, each active message it lacks is appended through the
   store's own rules (a session since closed by compression hands it to its live tip; a
   uid already stored anywhere in the lineage is not written again). Uids make every step
   idempotent: running it again stores nothing twice. The capture's manifest then records
   where it went, and the doctor stops naming it.
3. The spool is replayed the same way, oldest first; a batch whose session the target
   lacks gets a session of that id (source `recovered`) rather than waiting forever.

Never into the wrong generation: a capture or a batch written for another generation of
the store (a file since replaced) is brought into the profile's store only when the
caller says so (`other_generations`), and always when the target is a named new store;
otherwise it is reported as skipped, with the reason, and left where it is.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import InvalidInput, MessageConflict, NotFound, SessionDBError
from ..home import fsync_dir
from . import spool
from .contract import Store
from .locations import open_doctor, open_store
from .optional import Captures

RECOVERED_SOURCE = "recovered"  # the source of a session made for spooled messages whose own was lost
_INPUT = ("uid", "role", "content", "parts", "tool_calls", "tool_call_id", "tool_name", "reasoning",
          "finish_reason", "token_count", "timestamp", "display_kind")


@dataclass
class RestoreReport:
    """What came back, from where, into which store; and what was left, with why."""

    store: str  # where the messages went
    generation: str | None  # that store's generation, when its backend tells
    captures: list[dict[str, Any]] = field(default_factory=list)  # one entry per capture looked at
    spool: list[dict[str, Any]] = field(default_factory=list)  # one entry per spooled batch looked at
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # per session: restored, already there, skipped

    @property
    def restored(self) -> int:
        return sum(s["restored"] for s in self.sessions.values())

    @property
    def already_there(self) -> int:
        return sum(s["already_there"] for s in self.sessions.values())

    @property
    def left(self) -> list[str]:
        """Everything not brought back, each with its reason."""
        return ([f"{c['capture']}: {c['reason']}" for c in self.captures if c["outcome"] != "restored"]
                + [f"{b['file']}: {b['reason']}" for b in self.spool if b["outcome"] != "restored"])

    @property
    def complete(self) -> bool:
        return not self.left

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "restored": self.restored, "already_there": self.already_there, "left": self.left,
                "complete": self.complete}


def restore_captured(
    location: str | os.PathLike[str] | None = None,
    *,
    home: str | os.PathLike[str] | None = None,
    profile: str | None = None,
    into: str | os.PathLike[str] | None = None,
    other_generations: bool = False,
) -> RestoreReport:
    """Bring back every message captured in a retired WAL (a deleted `-wal`, a file copied or
    moved over the store) or refused into the spool, into the store it belongs to or, with
    `into`, a named new store; idempotent by uid. What another generation of the store (a
    file since replaced) wrote comes back only with `other_generations` (or `into`). The
    report counts what came back per session and says what was left and why (S-49)."""
    doctor = open_doctor(location, home=home, profile=profile)
    if not isinstance(doctor, Captures):
        raise InvalidInput(f"{doctor.location}: this store's backend keeps no captures; "
                           "`doctor --repair` replays its spool")
    anchor = Path(doctor.spool_anchor)
    if into is not None and os.path.realpath(into) == os.path.realpath(anchor):
        raise InvalidInput("--into names the store itself; leave it out to restore into the store")
    if into is not None:
        target = open_store(into, replay_spool=False)
    else:
        target = open_store(location, home=home, profile=profile, replay_spool=False)
    with target:
        generation = getattr(target.backend, "generation", None)
        report = RestoreReport(target.location, generation)
        # Into the profile's own store, its generation decides; a named new store is explicit.
        ours = None if into is not None else generation

        def belongs(written_for: str | None) -> bool:
            return other_generations or ours is None or written_for in (None, ours)

        for capture in doctor.captures():  # listed after the open, which may have set one aside
            _restore_capture(doctor, capture, target, report, belongs)
        for path in spool.pending(anchor):
            _restore_batch(path, target, report, belongs)
    return report


def _restore_capture(doctor: Captures, capture: dict[str, Any], target: Store, report: RestoreReport,
                     belongs: Any) -> None:
    entry = {"capture": capture["capture"], "cause": capture["cause"], "generation": capture["generation"],
             "outcome": "skipped", "reason": "", "restored": 0}
    report.captures.append(entry)
    if capture["restored"]:
        done = capture["restored"]
        entry["reason"] = f"already brought back into {done.get('into')}"
        entry["outcome"] = "restored"
        return
    if not belongs(capture["generation"]):
        entry["reason"] = (f"written for another generation of this store ({capture['generation']}, a file since "
                           f"replaced; the store is {report.generation}): bring it back with --other-generations, "
                           "or into a new store with --into")
        return
    scratch = Path(tempfile.mkdtemp(prefix=".sessiondb-restore-", dir=Path(doctor.spool_anchor).parent))
    try:
        try:
            reads = doctor.read_capture(capture["capture"], str(scratch))
        except SessionDBError as exc:
            entry["outcome"], entry["reason"] = "failed", f"the capture could not be read ({exc})"
            return
        entry["read"] = [{"messages": r.messages_kept, "lost_estimate": r.messages_lost_estimate, "notes": r.notes}
                         for r in reads]
        outputs = [r.output for r in reads if r.output and Path(r.output).exists()]
        if not outputs:
            entry["outcome"], entry["reason"] = "failed", "nothing in the capture was readable"
            return
        before, failures = report.restored, []
        for output in outputs:  # each reading adds what the ones before it missed, by uid
            with open_store(output, replay_spool=False) as source:
                failures += _bring_back(_sessions(source.export()), target, report)
        entry["restored"] = report.restored - before
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        entry["outcome"], entry["reason"] = "failed", "; ".join(failures)
        return
    entry["outcome"] = "restored"
    doctor.mark_restored(capture["capture"], {"into": report.store, "generation": report.generation,
                                              "messages": entry["restored"]})


def _restore_batch(path: Path, target: Store, report: RestoreReport, belongs: Any) -> None:
    entry = {"file": str(path), "outcome": "skipped", "reason": "", "restored": 0}
    report.spool.append(entry)
    try:
        record = spool.read(path)
    except (OSError, ValueError) as exc:
        entry["reason"] = f"not a readable spool file ({exc})"
        return
    entry["session"] = record["session_id"]
    if not belongs(record.get("generation")):
        entry["reason"] = (f"refused by another generation of this store ({record.get('generation')}, a file since "
                           "replaced): bring it back with --other-generations, or into a new store with --into")
        return
    group = {"session": {"id": record["session_id"]}, "messages": record["messages"], "records": None}
    before = report.restored
    failures = _bring_back([group], target, report)
    entry["restored"] = report.restored - before
    if failures:
        entry["outcome"], entry["reason"] = "failed", "; ".join(failures)
        return
    entry["outcome"] = "restored"
    path.unlink()
    fsync_dir(path.parent)


def _sessions(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """An export stream as one group per session: its session row, messages and all its records."""
    header = None
    group: dict[str, Any] | None = None
    for record in records:
        kind = record.get("type")
        if kind == "session":
            group = {"session": record["session"], "messages": [], "records": [header, record]}
        elif group is None:
            header = record
        else:
            group["records"].append(record)
            if kind == "message":
                group["messages"].append(record["message"])
            elif kind == "end":
                yield group
                group = None


def _bring_back(groups: Iterable[dict[str, Any]], target: Store, report: RestoreReport) -> list[str]:
    """Store what `target` lacks of each group; returns what failed, per session."""
    failures = []
    for group in groups:
        sid = group["session"]["id"]
        entry = report.sessions.setdefault(sid, {"restored": 0, "already_there": 0, "created": False, "skipped": []})
        try:
            _bring_back_session(sid, group, target, entry)
        except SessionDBError as exc:
            entry["skipped"].append(str(exc))
            failures.append(f"session {sid}: {exc}")
    return failures


def _bring_back_session(sid: str, group: dict[str, Any], target: Store, entry: dict[str, Any]) -> None:
    try:
        target.get_session(sid)
    except NotFound:
        if group["records"] is not None:  # a whole session from a capture: imported as it was
            result = target.import_records(group["records"])
            entry["created"] = True
            entry["restored"] += result.messages_imported
            entry["already_there"] += result.messages_skipped
            return
        target.create_session(RECOVERED_SOURCE, session_id=sid)  # spooled messages whose session was lost
        entry["created"] = True
    stored = {m.uid for m in target.transcript(sid, include_compacted=True)}
    wanted = []
    for message in group["messages"]:
        if message["uid"] in stored:
            entry["already_there"] += 1
        elif message.get("state", "active") != "active":
            entry["skipped"].append(f"{message['uid']}: {message['state']} in the captured history, and the "
                                    "session here has gone on without it")
        else:
            wanted.append(message)
    if not wanted:
        return
    before = _stored_messages(target)
    for message in wanted:
        try:
            target.append(sid, _as_input(message))
        except MessageConflict as exc:  # the uid holds another message here: both are kept as they are
            entry["skipped"].append(f"{message['uid']}: {exc}")
    added = _stored_messages(target) - before
    entry["restored"] += added
    entry["already_there"] += len(wanted) - added  # stored elsewhere in the session's lineage


def _as_input(message: dict[str, Any]) -> dict[str, Any]:
    """A message record (export or spool) as an append's input: its own fields, no row ids."""
    given = {k: message[k] for k in _INPUT if message.get(k) is not None}
    if "parts" in given:
        given.pop("content", None)  # the parts are the content; the text beside them is derived
    return given


def _stored_messages(store: Store) -> int:
    stats = store.stats()
    return stats.messages + stats.compacted_messages + stats.rewound_messages
